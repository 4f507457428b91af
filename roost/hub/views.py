"""The hub's pages besides the list, as lines of text: help, the event feed, the board."""

import time

from roost.client.terminal import printable
from roost.hub.fleet import TITLES
from roost.hub.screen import PLAIN_GLYPHS, age, extra_lines, host_mark, row_text, since_of

HELP = """\
roost hub: the whole fleet on one screen, live (the daemon pushes every change).

Groups: NEEDS YOU (waiting for an answer or a dialog; ranked by what answering unblocks:
tasks of the board that wait on its task, a merge train it holds, a dialog at start-up;
then by how long it waited; a session at its usage limit last), WORKING (the line its screen shows), FINISHED, FAILED.
Pinned jobs come first in their group, then the order you gave them (J/K).

  up/down, j/k   move              enter   attach (detach with Ctrl-q: back here)
  r              reply (one line; a suggested answer is offered when there is one)
  p              peek at its screen
  T              its timeline: each state with the rule that decided it, what was typed
  s              stop (asks first)  x      rm: remove an ended job (asks first)
  R              respawn            n      rename
  P              pin / unpin        J/K    move it down / up in its group
  /              filter (Esc clears) e     the event feed
  t              the board          ?      this help
  q              quit (Ctrl-c too)

In the one-line editor: Enter sends, Esc cancels, Ctrl-a/Ctrl-e start/end, Ctrl-u clears."""


def help_lines():
    return HELP.splitlines()


def feed_line(event):
    at = event.get("at")
    when = time.strftime("%H:%M:%S", time.localtime(at / 1000)) if isinstance(at, (int, float)) else "--:--:--"
    name = printable(event.get("name") or "roost", 24)
    who = f" (by {printable(event['who'], 40)})" if event.get("who") else ""
    return f"{when}  {name:<24}  {printable(event.get('text') or '', 500)}{who}"


def feed_lines(feed):
    return [feed_line(event) for event in feed] or ["nothing happened yet"]


def board_lines(tasks, board_line):
    lines = [board_line] if board_line else []
    for task in tasks:
        owner = task.get("owner") or {}
        after = f" after {', '.join('#' + str(other) for other in task['after'])}" if task.get("after") else ""
        stage = (task.get("workspace") or {}).get("stage")
        held = f" [{stage}]" if stage else ""
        by = f" ({printable(owner.get('name') or owner.get('id'), 40)})" if owner else ""
        lines.append(f"#{task.get('id'):<4} {task.get('state', ''):<8}{held} {printable(task.get('title') or '', 300)}"
                     f"{by}{after}")
    return lines or ["the board is empty: `roost task add TITLE` adds a task"]


def plain_lines(fleet, now_ms):
    """The groups as plain text, for a terminal that cannot draw a screen (TERM=dumb)."""
    lines = [line for line in extra_lines(fleet) if line]
    for group, rows in fleet.groups():
        lines.append(f"{PLAIN_GLYPHS[group]} {TITLES[group]} ({len(rows)})")
        for row, reason in rows:
            since = since_of(row, group)
            name = host_mark(row) + printable(row.get("name") or row["id"], 18)
            lines.append(f"  {name:<18} {age(since, now_ms):>4}  {printable(row_text(row, group, reason), 500)}")
    return lines or ["no jobs yet: `roost run` starts one"]
