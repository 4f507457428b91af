"""Press keys in a job's terminal: the keys that are not text, as a person presses them
to answer a dialog or a menu (`roost keys ID Down Enter`). Sent at once, whatever the
screen shows; `roost reply` is for text.

Usage:
  roost keys <id> <key>... [--json]
  roost keys --help

Keys: Enter, Tab, BTab, Escape, Backspace, Space, Up, Down, Left, Right, Home, End,
PageUp, PageDown, Insert, Delete; C-x (or ^x) for Ctrl-x; a single character as itself.

Options:
  --json  print the op's result as JSON
"""

from roost.cli.context import ExitStatus


def main(opts, ctx):
    result = ctx.call("keys", {"id": opts["<id>"], "keys": list(opts["<key>"])})
    if not result.get("taken"):
        ctx.show(opts, result, "not sent: the job is not reading its input")
        return ExitStatus.REFUSED
    ctx.show(opts, result, "")
    return ExitStatus.OK
