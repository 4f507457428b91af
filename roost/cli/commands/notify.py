"""Notifications: `test` sends one to each sink roost.json's `notify` names (the desktop
through notify-send, the hubs' terminals, your command) and says how each went.

Usage:
  roost notify test [--json]
  roost notify --help

Options:
  --json  print the op's result as JSON
"""

from roost.cli.context import ExitStatus


def main(opts, ctx):
    result = ctx.call("notify", {"action": "test"})
    lines = [f"{item['sink']:<9} " + ("sent" if item["ok"] else f"not sent: {item.get('error')}")
             for item in result["sinks"]]
    ctx.show(opts, result, "\n".join(lines) or "no sink is on (roost.json's notify)")
    return ExitStatus.OK if all(item["ok"] for item in result["sinks"]) else ExitStatus.REFUSED
