"""The one error type, carrying one of the closed set of codes below.

The codes are the spec's ("Error codes": the six an agent may see; the others the
daemon gives its other clients, named where the spec's ops use them), and `internal`,
roost's answer for a bug (logged with its traceback). A RoostError of any other code is
refused where it is made: a new code is a change of the protocol, made here first.
"""

BAD_REQUEST = "bad_request"
UNAUTHORIZED = "unauthorized"
NOT_FOUND = "not_found"
FULL = "full"
BUSY = "busy"
UNSUPPORTED = "unsupported"
CONFLICT = "conflict"
BLOCKED = "blocked"
POLICY = "policy"
RATE_LIMITED = "rate_limited"
TOO_LONG = "too_long"
LIMIT = "limit"
LOCKED = "locked"
INTERNAL = "internal"

# code -> what it means (docs/protocol.md shows this table).
CODES = {
    BAD_REQUEST: "malformed: a field of the wrong type, missing, or out of its limits (the text names it)",
    UNAUTHORIZED: "not this caller's: a wrong token (stop speaking for that job), or an op the caller may not call",
    NOT_FOUND: "no such job, task, schedule or order",
    FULL: "too many waiting: 50 replies, 20 agent items, 200 tasks, 20 watches, ...",
    BUSY: "try again shortly (a lock is held, a run is under way)",
    UNSUPPORTED: "not for this kind of caller or job, or not offered by this daemon",
    CONFLICT: "another holds it: a task claimed by a live session, a branch or path already there",
    BLOCKED: "a task waits on tasks not done yet (M47)",
    POLICY: "the concierge's policy does not allow it (M45)",
    RATE_LIMITED: "too many messages a minute from one session (M43)",
    TOO_LONG: "a message over its limit (M43)",
    LIMIT: "too many connections",
    LOCKED: "named by the spec for the daemon's other clients; no op of roost answers it today",
    INTERNAL: "a bug of the daemon's (logged with its traceback); the connection goes on",
}


class RoostError(Exception):
    """A refusal with a stable code; the server answers it as {ok: false, error, code}."""

    def __init__(self, code, text):
        if code not in CODES:
            raise ValueError(f"{code!r} is not one of roost's error codes (roost.errors.CODES)")
        super().__init__(text)
        self.code = code
        self.text = text

    def __repr__(self):
        return f"RoostError({self.code!r}, {self.text!r})"


def bad_request(text):
    return RoostError(BAD_REQUEST, text)


def not_found(text):
    return RoostError(NOT_FOUND, text)
