"""Did typed text leave the input line? (issue 3, "Typing")

Peer tools report text as sent when it was only typed: it sits on the agent's input
line, never submitted. roost checks the screen instead: after the submit keys, the
screen must have changed since before the text was typed, and the text must no longer
be shown pending on the cursor's line.
"""

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
