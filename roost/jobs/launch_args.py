"""DispatchArgs, a session to start (`dispatch`, `spawn`, a schedule's launch, a task's
start, the concierge's), as a contract (roost.contract): the ops that take one declare
it, and the launcher checks every launch with it, whoever built it (a stored schedule,
the board's verify run)."""

from roost.contract import Anything, Choice, Flag, Integer, ListOf, MapOf, Shape, Text
from roost.term.screen.screen import MAX_SIZE

ORIGINS = ("bg", "dispatch", "adopt", "fork")
DEFAULT_ROWS, DEFAULT_COLS = 40, 120
# M36: a request id is 1-64 of these; one of another form is refused.
REQUEST_ID = Text("M36: a resend with the same id is taken once (the first answer is given again).",
                  pattern=r"[A-Za-z0-9_.:-]{1,64}", pattern_text="requestId must be 1-64 of A-Z a-z 0-9 _ . : -",
                  default=None)

DISPATCH_ARGS = Shape({
    "kind": Choice(("pi", "shell"), "\"shell\" runs `command` or a profile's agent; \"pi\" is not supported by "
                   "this daemon (unsupported).", default="shell"),
    "cwd": Text("An absolute path to a directory.", min_length=1),
    "command": ListOf(Text(), "The argv (or empty, with `profile`).", default=[]),
    "env": MapOf(Text(), "Variables besides the user's environment.", default={}),
    "name": Text("Spaces folded, cut at 200; empty: named after its profile or program.", default=""),
    "sessionFile": Text(default=""),
    "model": Text(default=None),
    "thinking": Text(default=None),
    "agent": Text("M18: the agent it runs as.", default=None),
    "origin": Choice(ORIGINS, default="dispatch"),
    "worktree": Anything("M10: the worktree made for it {path, branch, base} (cwd is inside it).", object=True,
                         default=None),
    "fanout": Text("M26: one task, several models: the id the sessions share.", default=None),
    "profile": Text("M30: an agent profile's name (roost.json's or a built-in one).", default=None),
    "term": Anything("How its screen is read: {submit, settleMs, waiting?, working?, typeTask?}; patterns "
                     "run on RE2.", object=True, default=None),
    "resumeCommand": ListOf(Text(), "M30: the argv that reopens it.", default=None),
    "taskInArgv": Flag("M30: the first task is in its argv.", default=False),
    "resumable": Flag("M40: a run cut short can carry on (autoResume).", default=None),
    "protocol": Flag("M31: its agent speaks the roost agent protocol.", default=None),
    "requestId": REQUEST_ID,
    "task": Text("roost's own: the first task, typed once it first waits for text (or `term.typeTask`).",
                 typed="task", default=None),
    "rows": Integer("roost's own: its terminal's size.", minimum=2, maximum=MAX_SIZE, default=DEFAULT_ROWS),
    "cols": Integer(minimum=2, maximum=MAX_SIZE, default=DEFAULT_COLS),
    "person": Flag("issue 16: the person's own shell (the person's own dispatch only).", default=None),
    "sandbox": Flag("issue 26: false runs it without a jail (the person's own dispatch only).", default=None),
    "restart": Choice(("always", "never"), "\"always\": started again after the machine restarts.", default=None),
    "schedule": Text("M39: the schedule that started it.", default=None),
}, name="DispatchArgs", doc="A session to start (dispatch, spawn, a schedule's launch, a task's start).")
