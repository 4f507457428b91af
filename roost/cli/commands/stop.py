"""Stop a job: SIGTERM to it and every process it started, SIGKILL after a grace period;
returns once none of them is left.

Usage:
  roost stop <id> [--json]
  roost stop --help

Options:
  --json  print the op's result as JSON
"""


def main(opts, ctx):
    result = ctx.call("stop", {"id": opts["<id>"]})
    ctx.show(opts, result, f"stopped {result['id']}")
