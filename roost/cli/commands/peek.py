"""Print a job's screen as text, without attaching: what a person would see on it now
(an ended job's last screen, rebuilt from its log).

Usage:
  roost peek <id> [--lines=N] [--json]
  roost peek --help

Options:
  --lines=N  only the last N lines of the screen (at most 1000)
  --json     print the op's result as JSON
"""

from roost.cli.context import ExitStatus


def main(opts, ctx):
    args = {"id": opts["<id>"]}
    if opts["--lines"] is not None:
        try:
            lines = int(opts["--lines"])
        except ValueError:
            lines = 0
        if lines < 1:
            ctx.stderr.write("roost peek: --lines takes a positive number\n")
            return ExitStatus.USAGE
        args["lines"] = lines
    result = ctx.call("peek", args)
    if opts["--json"]:
        ctx.show(opts, result, None)
    elif result.get("text"):
        ctx.say_as_is(result["text"])     # a screen as a person sees it: rendered text
    return ExitStatus.OK
