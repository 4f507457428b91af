"""Print a job's flight recorder: each change of its row with the rule that decided it,
each text roost typed into it and whether it was submitted, dialogs answered and by
whom, its starts and adoptions (`jobs/<id>/timeline.jsonl`).

Usage:
  roost timeline <id> [--last=N] [--screens] [--json]
  roost timeline --help

Options:
  --last=N   only the last N entries
  --screens  print the screen recorded with each state too
  --json     print the op's result as JSON
"""

from roost.cli.context import ExitStatus
from roost.client.timeline_text import line


def main(opts, ctx):
    args = {"id": opts["<id>"]}
    if opts["--last"] is not None:
        try:
            args["limit"] = int(opts["--last"])
        except ValueError:
            args["limit"] = 0
        if args["limit"] < 1:
            ctx.stderr.write("roost timeline: --last takes a positive number\n")
            return ExitStatus.USAGE
    result = ctx.call("timeline", args)
    text = "\n".join(line(entry, opts["--screens"]) for entry in result["entries"]) or "nothing recorded yet"
    ctx.show(opts, result, text)
    return ExitStatus.OK
