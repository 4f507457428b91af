"""List the jobs: live ones, pinned ones and those that ended in the last day (--all:
every job on record). Pinned jobs (*) first, then the order they were put in. A job that
runs without a jail (docs/security.md) says `[no jail]`.

Usage:
  roost list [--all] [--cwd=DIR] [--watch] [--json]
  roost list --help

Options:
  --all      every job, however long ago it ended
  --cwd=DIR  only jobs working in DIR (or below it)
  --watch    print the list again each time it changes (the daemon pushes the
             changes; Ctrl-c ends it); with --json, one result a line
  --json     print the op's result as JSON
"""

import json
import os
import time

from roost.client.connection import Lost, Refused, Unreachable
from roost.rows import spend_text


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
        if row.get("waitingFor") == "limit":
            return "limit"      # at its usage limit (issue 19): its summary says until when
        if row.get("waitingFor") == "budget":
            return "budget"     # parked at a budget (issue 29): `roost budget` says which
        # Blocked on what roost cannot read (issue 27: no pattern matched, or the kernel
        # cannot tell whether it reads its terminal): no question, said as such.
        return "waiting" if row.get("status") == "waiting" else "?"
    return row["state"]


def table(rows, now):
    if not rows:
        return "no jobs"
    lines = [f"  {'ID':<8}  {'STATE':<8}  {'FOR':>4}  {'SPEND':>9}  {'NAME':<28}  SUMMARY"]
    for row in rows:
        text = row.get("error") if row["state"] == "failed" and row.get("error") else row.get("summary")
        text = " ".join((text or "").split())[:80]
        name = row["name"] if len(row["name"]) <= 28 else row["name"][:27] + "…"
        mark = "*" if row.get("pinned") else " "
        queued = f" (+{row['queued']} queued)" if row.get("queued") else ""
        if row.get("sandboxed") is False:
            queued += " [no jail]"
        lines.append(f"{mark} {row['id']:<8}  {state_text(row):<8}  {age(row['stateSince'], now):>4}  "
                     f"{spend_text(row.get('spend')):>9}  {name:<28}  {text}{queued}".rstrip())
    return "\n".join(lines)


def main(opts, ctx):
    args = {"all": bool(opts["--all"])}
    if opts["--cwd"]:
        args["cwd"] = os.path.abspath(opts["--cwd"])
    if opts["--watch"]:
        return watch(opts, ctx, args)
    result = ctx.call("list", args)
    if opts["--json"]:
        ctx.show(opts, result, None)
        return
    ctx.show(opts, result, table(result["jobs"], time.time()) + today_text(ctx))


def today_text(ctx):
    """The fleet's spend today, under the table (issue 29), when any was read."""
    try:
        today = ctx.call("usage", {"by": "host", "since": "today"})["total"]
    except Refused:
        return ""         # a daemon from before `usage`
    tokens = today["tokens"]
    if not tokens["input"] and not tokens["output"]:
        return ""
    shown = spend_text({"usd": today["usd"], "tokens": tokens})
    unpriced = f" (no price for {', '.join(today['unpriced'])})" if today["unpriced"] else ""
    return f"\nspent today: {shown}{unpriced}"


def _order(row):
    """`list`'s order (roost.rows), of the rows the daemon sends."""
    from roost.rows import order_key

    return order_key(row)


def _in_dir(row, directory):
    cwd = row.get("cwd") or ""
    return directory is None or cwd == directory or cwd.startswith(directory.rstrip("/") + "/")


def watch(opts, ctx, args):
    """The list, then again at each push that changes it (subscribe: no polling)."""
    client = ctx.client()
    clear = not opts["--json"] and hasattr(ctx.stdout, "isatty") and ctx.stdout.isatty()
    try:
        client.call("subscribe")                       # pushes from here on; then the list
        rows = {row["id"]: row for row in client.call("list", args)["jobs"]}
        client.pending_events = [message for message in client.pending_events if message.get("event") != "rows"]
        while True:
            shown = sorted(rows.values(), key=_order)
            if opts["--json"]:
                ctx.say(json.dumps({"jobs": shown}, ensure_ascii=False))
            else:
                ctx.say(("\x1b[H\x1b[2J" if clear else "\n") + table(shown, time.time()))
            ctx.stdout.flush()
            changed = False
            while not changed:
                message = client.next_event()
                if message.get("event") == "rows":
                    for row in message["rows"]:
                        if _in_dir(row, args.get("cwd")):
                            changed = changed or rows.get(row["id"]) != row
                            rows[row["id"]] = row
                elif message.get("event") == "removed" and message.get("id") in rows:
                    del rows[message["id"]]
                    changed = True
    except Lost:
        raise Unreachable("the daemon closed the connection")
    finally:
        client.close()
