"""Pin a job: listed first and never reaped for idleness (--off unpins it).

Usage:
  roost pin <id> [--off] [--json]
  roost pin --help

Options:
  --off   unpin it
  --json  print the op's result as JSON
"""


def main(opts, ctx):
    result = ctx.call("pin", {"id": opts["<id>"], "pinned": not opts["--off"]})
    ctx.show(opts, result, f"{'pinned' if result['pinned'] else 'unpinned'} {result['id']}")
