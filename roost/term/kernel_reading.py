"""A reading from the kernel's word (issue 27): what a job's row says when its screen
alone cannot tell, and when the screen's word is held back.

A profile that names no `waiting` pattern (every plain `roost run CMD`) is read from
what its processes do (roost.unix.terminal_waits): one reads its terminal: it waits
(for an answer; for its first task only when it is an agent that takes one); they run
or wait on anything else: it works, however long its screen is quiet; one waits on the
terminal among other files: unknown (status null: roost cannot tell, types nothing, and
no one is called for it).

For a profile with patterns the kernel's word stands beside the screen's: a screen
that reads waiting while none of the job's processes can be reading the terminal
(nothing reads it, nothing waits on a set that holds it) is held as the row was, and
the timeline says so.

Its words for `roost explain` and the timeline: roost.unix.terminal_waits.describe.
"""

from roost.unix.terminal_waits import BUSY, READS, UNKNOWN

MAX_QUESTION = 2000
RECHECK_FIRST = 1.0       # a quiet job's processes are looked at again after this,
RECHECK_MAX = 60.0        # then twice as late each time they say the same, up to this
NO_WORD = {"verdict": UNKNOWN, "reason": "the kernel's word could not be had", "seen": []}


def from_kernel(evidence, lines, cursor_row, summary, typed, takes_task):
    """The reading a plain profile's quiet screen (`lines`, its `summary`) gets from
    `evidence` (None: no word)."""
    evidence = evidence if isinstance(evidence, dict) else NO_WORD
    verdict = evidence.get("verdict")
    why = {"rule": "kernel", "kernel": evidence}
    if typed:
        why["typed"] = True
    if verdict == READS:
        waiting_for = "first-prompt" if takes_task and not typed else "question"
        return {"state": "blocked", "status": "waiting", "waitingFor": waiting_for, "summary": summary,
                "question": asked(lines, cursor_row), "why": why}
    if verdict == BUSY:
        return {"state": "working", "status": "busy", "waitingFor": None, "summary": summary, "why": why}
    return {"state": "blocked", "status": None, "waitingFor": None, "summary": summary, "why": why}


def cannot_be_waiting(evidence):
    """The kernel says no process of the job can be reading its terminal now."""
    return isinstance(evidence, dict) and evidence.get("verdict") == BUSY


def held(current, screen, evidence):
    """The row as it was (`current`), its screen's reading (`screen`) held back."""
    reading = dict(current)
    reading["why"] = {"rule": "held", "screen": screen.get("why"), "kernel": evidence,
                      "was": (current.get("why") or {}).get("rule")}
    return reading


def asked(lines, cursor_row):
    """The question a program that reads its terminal asks: the cursor's line up to the
    cursor, else the last line with text above it."""
    if cursor_row is None or not 0 <= cursor_row < len(lines):
        cursor_row = len(lines) - 1
    for line in reversed(lines[:cursor_row + 1]):
        if line.strip():
            return line.strip()[:MAX_QUESTION]
    return None


class Rechecks:
    """When a quiet job's processes are looked at again: soon after what they do
    changed, then less and less often while they keep doing it."""

    __slots__ = ("every", "due", "verdict")

    def __init__(self):
        self.every = None
        self.due = None
        self.verdict = None

    def seen(self, verdict, now):
        if verdict != self.verdict or self.every is None:
            self.every = RECHECK_FIRST
        else:
            self.every = min(RECHECK_MAX, self.every * 2)
        self.verdict = verdict
        self.due = now + self.every

    def soon(self, now):
        """Something happened that may change what they do: look soon, as at first.
        True when that moves the next look forward."""
        self.every = None
        if self.due is None or self.due <= now + RECHECK_FIRST:
            return False
        self.due = now + RECHECK_FIRST
        return True

    def stop(self):
        self.every = self.due = self.verdict = None

    def left(self, now):
        return None if self.due is None else max(0.0, self.due - now)
