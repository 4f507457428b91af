"""Typing into a job's terminal, and whether the text left the input line.

Peer tools report text as sent when it was only typed: it sits on the agent's input
line, never submitted. roost checks the screen instead: after the submit keys, the
screen must have changed since before the text was typed, and the text must no longer
be shown pending on the cursor's line.
"""

import collections

ECHO_WAIT = 0.5               # time a program gets to show typed text before submit keys

# Enough of the text's end to recognise it on the cursor's line, short enough that a
# wrapped input line still shows it whole.
TAIL = 24


def pending_tail(text):
    """The end of the last non-blank line of `text`, as an input line would show it."""
    for line in reversed(text.replace("\r", "\n").split("\n")):
        stripped = line.strip()
        if stripped:
            return stripped[-TAIL:]
    return ""


def left_input_line(before, after, cursor, text):
    """`before`/`after`: screen lines; `cursor`: (row, col) now; `text`: what was typed."""
    if after == before:
        return False
    tail = pending_tail(text)
    if not tail:
        return True
    row = cursor[0]
    if 0 <= row < len(after) and tail in after[row]:
        return False
    return True


def pending_on_input_line(lines, cursor, text):
    """The input line (the cursor's) ends with `text`'s tail: it was typed and is still
    there, not submitted."""
    tail = pending_tail(text)
    row = cursor[0]
    return bool(tail) and 0 <= row < len(lines) and lines[row].rstrip().endswith(tail)


# What typing needs of a job's terminal, and no more (roost.term.terminal.Terminal
# hands one over: Terminal.keyboard). `screen`: its screen (lines, cursor, bracketed
# paste); `writer`: its pty writer (roost.term.pty_writer); `submit`: the keys that submit
# a line; `wait_for(predicate, timeout)`: until it holds, woken by the screen's changes;
# `busy()`: the screen is judged working; `ended()`: the terminal has ended; `catch_up()`:
# the screen fed all that was read.
Keyboard = collections.namedtuple("Keyboard", "screen writer submit wait_for busy ended catch_up "
                                              "verify_timeout write_timeout")


def type_text(keyboard, text, mode, timeout, on_submit=None):
    """Types `text` and the submit keys on `keyboard` (a Keyboard), then checks the text
    left the input line; {submitted, error}. `on_submit` is called once the program's side
    took the submit keys, before the check. followUp waits (up to `timeout` seconds, None:
    as long as the job lives) until the screen is not judged working; steer types at once.
    The caller holds the terminal's typing turn."""
    if mode != "steer":
        settled = keyboard.wait_for(lambda: not keyboard.busy() or keyboard.ended(), timeout)
        if not settled:
            return not_submitted("the job was still working when the wait ended")
    if keyboard.ended():
        return not_submitted("the job's terminal has ended")
    screen = keyboard.screen
    keyboard.catch_up()
    before = screen.lines()
    payload = text.encode("utf-8")
    if payload and screen.bracketed_paste and ("\n" in text or "\r" in text):
        payload = b"\x1b[200~" + payload + b"\x1b[201~"
    if payload:
        if not write_all(keyboard, payload):
            return not_submitted("the job is not reading its input")
        keyboard.wait_for(lambda: screen.lines() != before, ECHO_WAIT)
    if not write_all(keyboard, keyboard.submit.encode("utf-8")):
        return not_submitted("the job is not reading its input")
    if on_submit is not None:
        on_submit()       # the program has the keys: what is kept of it must say so now
    if not keyboard.wait_for(lambda: left_input_line(before, screen.lines(), screen.cursor, text),
                             keyboard.verify_timeout):
        return not_submitted("the text was typed but stayed on the input line")
    return {"submitted": True, "error": None}


def write_all(keyboard, data):
    """Queues `data` and waits until the program's side took all of it. On timeout what
    it did not take is withdrawn, so it cannot arrive late."""
    writer = keyboard.writer
    start = writer.queued_end
    end = start + len(data)
    writer.enqueue(data)
    if keyboard.wait_for(lambda: writer.written >= end, keyboard.write_timeout):
        return True
    writer.withdraw(start, end)
    return False


def not_submitted(error):
    return {"submitted": False, "error": error}
