"""Show the daemon's state.

Usage:
  roost status [--json]
  roost status --help
"""

import time


def main(opts, ctx):
    result = ctx.call("status")
    started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(result["startedAt"] / 1000))
    lines = [
        f"roost {result['version']}, pid {result['pid']}, up since {started}",
        f"socket in {result['socketDir']}",
        f"jobs: {result['liveJobs']} live, {result['totalJobs']} in all",
    ]
    if result.get("ptyError"):
        lines.append(f"pty trouble: {result['ptyError']}")
    for path in result.get("corruptFiles") or []:
        lines.append(f"damaged state file set aside: {path}")
    ctx.show(opts, result, "\n".join(lines))
