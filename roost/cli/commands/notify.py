"""Notifications: `test` sends one to each sink roost.json's `notify` names (the desktop
through notify-send, the hubs' terminals, your command) and says how each went.

`ntfy TOPIC` is the `command` sink's recipe for ntfy (a phone): it reads the
notification roost hands the command on its stdin and runs `ntfy publish` with its title,
its body and, when roost.json's `web` says where the page is (`url`, or `behindProxy`),
a click and an "Open in roost" action button that open the page at the job:

    "notify": {"command": ["roost", "notify", "ntfy", "mytopic"]}

Usage:
  roost notify test [--json]
  roost notify ntfy <topic> [--ntfy=PROGRAM]
  roost notify --help

Options:
  --json          print the op's result as JSON
  --ntfy=PROGRAM  the ntfy command [default: ntfy]
"""

import json
import subprocess
import sys

from roost.cli.context import ExitStatus

PRIORITY = {"question": "high", "dialog": "high", "failure": "high", "limit": "default", "review": "default"}


def main(opts, ctx):
    if opts["ntfy"]:
        return ntfy(opts, ctx)
    result = ctx.call("notify", {"action": "test"})
    lines = [f"{item['sink']:<9} " + ("sent" if item["ok"] else f"not sent: {item.get('error')}")
             for item in result["sinks"]]
    ctx.show(opts, result, "\n".join(lines) or "no sink is on (roost.json's notify)")
    return ExitStatus.OK if all(item["ok"] for item in result["sinks"]) else ExitStatus.REFUSED


def ntfy_argv(note, topic, program="ntfy"):
    """`ntfy publish` for one notification (an argv list: the note's text is never a shell's)."""
    argv = [program, "publish", "--title", str(note.get("title") or "roost"),
            "--priority", PRIORITY.get(note.get("kind"), "default"), "--tags", "roost"]
    url = note.get("url")
    if isinstance(url, str) and url.startswith(("https://", "http://")):
        argv += ["--click", url, "--actions", f"view, Open in roost, {url}, clear=true"]
    return argv + ["--", topic, str(note.get("body") or note.get("title") or "roost")]


def ntfy(opts, ctx):
    try:
        note = json.loads(sys.stdin.buffer.read() or b"{}")
    except ValueError:
        ctx.stderr.write("roost notify ntfy: the notification on stdin is not JSON\n")
        return ExitStatus.USAGE
    if not isinstance(note, dict):
        note = {}
    try:
        done = subprocess.run(ntfy_argv(note, opts["<topic>"], opts["--ntfy"]), stdin=subprocess.DEVNULL)
    except OSError as error:
        ctx.stderr.write(f"roost notify ntfy: cannot run {opts['--ntfy']}: {error.strerror or error}\n")
        return ExitStatus.REFUSED
    return ExitStatus.OK if done.returncode == 0 else ExitStatus.REFUSED
