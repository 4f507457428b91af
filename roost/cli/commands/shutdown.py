"""Stop the daemon. Without --keep-workers every job is stopped too; with it the jobs go
on running and the next daemon adopts them.

Usage:
  roost shutdown [--keep-workers] [--json]
  roost shutdown --help
"""

from roost.client.connection import Unreachable


def main(opts, ctx):
    try:
        client = ctx.client(autostart=False, check_version=False)
    except Unreachable:
        ctx.show(opts, {"running": False}, "no daemon is running")
        return 0
    try:
        result = client.call("shutdown", {"keepWorkers": bool(opts["--keep-workers"])})
    finally:
        client.close()
    ctx.show(opts, result, "the daemon is stopping" + (" (jobs kept running)" if opts["--keep-workers"] else ""))
