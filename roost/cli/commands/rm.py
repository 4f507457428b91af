"""Remove a job and its directory (a live one is stopped first).

Usage:
  roost rm <id> [--json]
  roost rm --help

Options:
  --json  print the op's result as JSON
"""


def main(opts, ctx):
    result = ctx.call("rm", {"id": opts["<id>"]})
    ctx.show(opts, result, f"removed {result['id']}")
