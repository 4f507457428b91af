"""Check that the daemon answers (it is started when none does).

Usage:
  roost ping [--json]
  roost ping --help
"""


def main(opts, ctx):
    result = ctx.call("ping")
    ctx.show(opts, result, f"pong from roost {result['version']} (pid {result['pid']})")
