"""How a job's screen is read: a profile's `term` (the spec's DispatchArgs.term).

`submit`: the keys that submit typed text; `settleMs`: the quiet time before the screen
is judged; `waiting` / `working`: regexes over the rendered screen; `typeTask`: kept for
whoever types the first task. A reading is what the screen says about the job, in the
JobRow's words: {state, status, waitingFor, summary}.
"""

import logging
import re

log = logging.getLogger(__name__)

DEFAULT_SUBMIT = "\r"
DEFAULT_SETTLE_MS = 700
MAX_SUMMARY = 500


def working_reading(summary=None):
    return {"state": "working", "status": "busy", "waitingFor": None, "summary": summary}


def _pattern(value, name):
    if not isinstance(value, str) or not value:
        return None
    try:
        return re.compile(value, re.MULTILINE)
    except re.error as error:
        # A profile's bad regex must not stop the job: it is read as if absent.
        log.warning("term.%s %r is not a valid regex (%s); ignored", name, value, error)
        return None


class TermProfile:
    def __init__(self, term=None):
        term = term if isinstance(term, dict) else {}
        submit = term.get("submit")
        self.submit = submit if isinstance(submit, str) else DEFAULT_SUBMIT
        settle = term.get("settleMs")
        if isinstance(settle, bool) or not isinstance(settle, (int, float)) or settle < 0:
            settle = DEFAULT_SETTLE_MS
        self.settle = min(settle, 600_000) / 1000.0
        self.waiting = _pattern(term.get("waiting"), "waiting")
        self.working = _pattern(term.get("working"), "working")
        type_task = term.get("typeTask")
        self.type_task = type_task if isinstance(type_task, str) else None

    def judge(self, lines, typed):
        """The reading of a screen that has been quiet for `settle` seconds.

        `working` matching wins (a spinner that stopped still means work); `waiting`
        matching means the program waits for the user: for its first prompt while
        nothing has been typed, for an answer after. A profile that names what waiting
        looks like and sees neither says so (status None) rather than guess; one that
        does not, takes quiet for waiting.
        """
        text = "\n".join(lines)
        summary = last_line(lines)
        if self.working is not None and self.working.search(text):
            return working_reading(summary)
        if (self.waiting is not None and self.waiting.search(text)) or self.waiting is None:
            return {"state": "blocked", "status": "waiting",
                    "waitingFor": "question" if typed else "first-prompt", "summary": summary}
        return {"state": "blocked", "status": None, "waitingFor": None, "summary": summary}


def last_line(lines):
    for line in reversed(lines):
        stripped = line.strip()
        if stripped:
            return stripped[:MAX_SUMMARY]
    return None
