"""Start a child of this job: a command, or an agent from a profile, as `roost run`
starts one, with this job as its parent (its row says parentSession). An agent's
command: run it inside a roost job; it acts for that job.

Usage:
  roost spawn [--name=NAME] [--cwd=DIR] [--profile=PROFILE] [--json] [--] <command>...
  roost spawn --profile=PROFILE [--name=NAME] [--cwd=DIR] [--json]
  roost spawn --help

Options:
  --name=NAME        the child's name (default: its program, or the profile's name)
  --cwd=DIR          where it runs (default: the current directory)
  --profile=PROFILE  an agent profile of roost.json ("agentProfiles")
  --json             print the op's result as JSON
"""

from roost.cli.commands import run
from roost.cli.context import ExitStatus

adjust_argv = run.adjust_argv   # roost's options end at the command's first word, as for run


def main(opts, ctx):
    args = run.dispatch_args(opts, ctx, "spawn")
    if args is None:
        return ExitStatus.USAGE
    result = ctx.call_as_job("spawn", {"launch": args})
    ctx.show(opts, result, f"started {result['id']} {result['name']}")
    return ExitStatus.OK
