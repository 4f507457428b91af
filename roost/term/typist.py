"""Typing into a job's terminal, and whether the text left the input line.

Peer tools report text as sent when it was only typed: it sits on the agent's input
line, never submitted. roost checks the screen instead: after the submit keys, the
screen must have changed since the typed text showed, and the text must no longer be
shown pending on the cursor's line.

The submit keys wait for the typed text to show, and a moment more; not for any change
of the screen. An agent that takes fast typing for a paste (Codex CLI: the first keys
drawn as typed, the rest gathered, an Enter within ~120 ms of them a newline of the
paste) makes an early Enter a newline, and its footer may change meanwhile (issue 27: a
blinking warning, under load, let a reply's Enter in early; it was never submitted).
"""

import collections

ECHO_WAIT = 0.5               # a program that shows nothing of what is typed: its submit keys then
ECHO_MAX = 3.0                # one whose screen moves meanwhile gets this long to show the text
SUBMIT_GAP = 0.15             # from the text shown to the submit keys: past a paste's Enter window
PASTE_KEYS = 3                # fewer quick keys than this are typing, not a paste (Codex's MIN_CHARS)

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


def left_input_line(before, after, cursor, text, echoed=None):
    """`before`/`after`: screen lines; `cursor`: (row, col) now; `text`: what was typed;
    `echoed`: (lines, cursor) once it showed, when it did. With it, the text is pending
    while the line it showed on is still the cursor's, as it was (a next prompt that
    happens to hold the text's last key is not it); without, while the cursor's line
    shows the text's end."""
    if after == before or (echoed is not None and (after, cursor) == echoed):
        return False
    row = cursor[0]
    if echoed is not None:
        lines, (was_row, _) = echoed
        return not (row == was_row and 0 <= row < min(len(after), len(lines)) and after[row] == lines[row])
    tail = pending_tail(text)
    if not tail:
        return True
    if 0 <= row < len(after) and tail in after[row]:
        return False
    return True


def wait_for_echo(keyboard, before, row, text):
    """(lines, cursor) once the program shows the typed `text` (the screen was `before`,
    its cursor on `row`), a moment after (SUBMIT_GAP); None when it shows nothing of it
    (ECHO_WAIT), or takes a key or two at once (a dialog: its cursor's line changed).
    While only other lines move (a footer, a title), or its line shows the text's first
    keys (a paste being gathered), it gets up to ECHO_MAX."""
    screen = keyboard.screen
    shown = lambda: shows_typed(before, screen.lines(), text)      # noqa: E731
    if not keyboard.wait_for(shown, ECHO_WAIT):
        after = screen.lines()
        if after == before:
            return None
        key_taken = 0 <= row < min(len(before), len(after)) and after[row] != before[row]
        if len(text.strip()) < PASTE_KEYS and key_taken:
            return None
        if not keyboard.wait_for(shown, ECHO_MAX - ECHO_WAIT):
            return None
    if len(text) >= PASTE_KEYS:
        keyboard.wait_for(keyboard.ended, SUBMIT_GAP)
    return screen.lines(), screen.cursor


def shows_typed(before, after, text):
    """The screen `after` shows `text`'s end where `before` did not (more times than it
    did: an input line may repeat an earlier one); text with no visible end shows at
    any change."""
    tail = pending_tail(text)
    if not tail:
        return after != before
    return _count(after, tail) > _count(before, tail)


def _count(lines, tail):
    # A long input line wraps: its end may straddle two rows.
    return max("\n".join(lines).count(tail), "".join(lines).count(tail))


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
    before, row = screen.lines(), screen.cursor[0]
    echoed = None
    payload = text.encode("utf-8")
    if payload and screen.bracketed_paste and ("\n" in text or "\r" in text):
        payload = b"\x1b[200~" + payload + b"\x1b[201~"
    if payload:
        if not write_all(keyboard, payload):
            return not_submitted("the job is not reading its input")
        echoed = wait_for_echo(keyboard, before, row, text)
    if not write_all(keyboard, keyboard.submit.encode("utf-8")):
        return not_submitted("the job is not reading its input")
    if on_submit is not None:
        on_submit()       # the program has the keys: what is kept of it must say so now
    if not keyboard.wait_for(lambda: left_input_line(before, screen.lines(), screen.cursor, text, echoed),
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
