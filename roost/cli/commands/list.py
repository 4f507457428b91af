"""List the jobs: live ones, pinned ones and those that ended in the last day (--all:
every job on record). Pinned jobs (*) first, then the order they were put in.

Usage:
  roost list [--all] [--cwd=DIR] [--json]
  roost list --help

Options:
  --all      every job, however long ago it ended
  --cwd=DIR  only jobs working in DIR (or below it)
  --json     print the op's result as JSON
"""

import os
import time


def age(since_ms, now):
    seconds = max(0, int(now - since_ms / 1000))
    for size, unit in ((86400, "d"), (3600, "h"), (60, "m")):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def state_text(row):
    if row.get("reaped"):
        return "reaped"
    if row["state"] == "blocked":
        if row.get("unreadSince"):
            return "unread"     # its screen matches none of its profile's patterns
        return "waiting" if row.get("status") == "waiting" else "blocked"
    return row["state"]


def table(rows, now):
    if not rows:
        return "no jobs"
    lines = [f"  {'ID':<8}  {'STATE':<8}  {'FOR':>4}  {'NAME':<28}  SUMMARY"]
    for row in rows:
        text = row.get("error") if row["state"] == "failed" and row.get("error") else row.get("summary")
        text = " ".join((text or "").split())[:80]
        name = row["name"] if len(row["name"]) <= 28 else row["name"][:27] + "…"
        mark = "*" if row.get("pinned") else " "
        queued = f" (+{row['queued']} queued)" if row.get("queued") else ""
        lines.append(f"{mark} {row['id']:<8}  {state_text(row):<8}  {age(row['stateSince'], now):>4}  "
                     f"{name:<28}  {text}{queued}".rstrip())
    return "\n".join(lines)


def main(opts, ctx):
    args = {"all": bool(opts["--all"])}
    if opts["--cwd"]:
        args["cwd"] = os.path.abspath(opts["--cwd"])
    result = ctx.call("list", args)
    ctx.show(opts, result, table(result["jobs"], time.time()))
