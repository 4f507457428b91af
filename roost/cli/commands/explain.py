"""Say why a job's row says what it says now: the rule of its profile that read its
screen (or the agent's own report, or how its run ended), what holds roost's typing and
what waits to be typed, in one paragraph.

Usage:
  roost explain <id> [--json]
  roost explain --help

Options:
  --json  print the op's result as JSON
"""

import textwrap

from roost.cli.context import ExitStatus


def main(opts, ctx):
    result = ctx.call("explain", {"id": opts["<id>"]})
    ctx.show(opts, result, textwrap.fill(result["text"], 88))
    return ExitStatus.OK
