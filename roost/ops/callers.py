"""Who may call which op: the spec's "Callers / Refused" lines as one table (M49).

Every connection is one of five callers. A Person never identified itself and its
process runs outside every job; an Unregistered agent said `hello` but has no accepted
report yet; a Session's report was accepted (or it said `peer_register` or
`speak_for`); the Concierge is the hub's own agent. roost's own fifth, In a job, is a
connection that never identified itself from a process inside a job (issue 16: who is
the person is decided from the peer's credentials, roost.jobs.origins): it is never the
person, whatever it says, and may only read what anyone may, or say who it is. The op
table (roost.ops.run) checks this table, and only this table, before an op runs. It
fails closed: an op without a row here is refused to every caller, and an op that does
not name In a job in its row is refused to it.
"""

from roost.errors import BAD_REQUEST, UNAUTHORIZED, RoostError

PERSON = "person"
UNREGISTERED = "unregistered"
SESSION = "session"
CONCIERGE = "concierge"
IN_JOB = "in a job"
EVERYONE = (PERSON, UNREGISTERED, SESSION, CONCIERGE, IN_JOB)

# A row allows In a job only when it says so (None): rows that do not name it refuse it.
_IN_JOB_REFUSED = "unauthorized"
_ANYONE = {IN_JOB: None}
# The hub's ops: a person's only; every identified caller is refused with `unsupported`.
_PERSON_ONLY = {CONCIERGE: "unsupported", SESSION: "unsupported", UNREGISTERED: "unsupported"}
# The agent-to-agent ops: a session's or the concierge's.
_PEERS_ONLY = {PERSON: "unauthorized", UNREGISTERED: "unauthorized"}
_CONCIERGE_ONLY = {PERSON: "unauthorized", SESSION: "unsupported", UNREGISTERED: "unauthorized"}

# op name -> {caller: the code it is refused with}; a caller not named may call it.
REFUSED = {
    "ping": _ANYONE,
    "hello": _ANYONE,
    "status": _ANYONE,
    "list": _ANYONE,
    "resolve": _ANYONE,
    "report": _ANYONE,
    "ack": _ANYONE,
    "peer_register": _ANYONE,
    # roost's own: a job's process speaks for its job (a terminal agent's shell tool).
    "speak_for": _ANYONE,
    # roost's own (issue 18): `roost notify test`, a person's.
    "notify": _PERSON_ONLY,
    "dispatch": _PERSON_ONLY,
    "stop": _PERSON_ONLY,
    "rm": _PERSON_ONLY,
    "respawn": _PERSON_ONLY,
    "reply": _PERSON_ONLY,
    "pin": _PERSON_ONLY,
    # roost's own (issue 19): the jobs parked at their usage limit, and a job's resume.
    "limits": _PERSON_ONLY,
    "limit-resume": _PERSON_ONLY,
    # roost's own (issue 29): what the fleet spends, and the price table in force.
    "usage": _PERSON_ONLY,
    "prices": _PERSON_ONLY,
    "windows": _PERSON_ONLY,
    "budgets": _PERSON_ONLY,
    "budget-allow": _PERSON_ONLY,
    "rename": _PERSON_ONLY,
    "reorder": _PERSON_ONLY,
    "subscribe": _PERSON_ONLY,
    "shutdown": _PERSON_ONLY,
    "schedules": _PERSON_ONLY,
    "schedule-add": _PERSON_ONLY,
    "schedule-rm": _PERSON_ONLY,
    "schedule-pause": _PERSON_ONLY,
    "schedule-run": _PERSON_ONLY,
    "concierge": _PERSON_ONLY,
    "concierge-ask": _PERSON_ONLY,
    "peers": _PEERS_ONLY,
    "send": _PEERS_ONLY,
    "spawn": _PEERS_ONLY,
    "watch": _PEERS_ONLY,
    # handback: background sessions only; the foreground kind is not built.
    "handback": _PEERS_ONLY,
    "peer_ack": {PERSON: "unauthorized", CONCIERGE: "unsupported", UNREGISTERED: "unauthorized"},
    "events": {SESSION: "unsupported", UNREGISTERED: "unsupported"},
    "concierge-say": _CONCIERGE_ONLY,
    "concierge-policy": _CONCIERGE_ONLY,
    "concierge-suggest": _CONCIERGE_ONLY,
    "concierge-reply": _CONCIERGE_ONLY,
    "concierge-act": _CONCIERGE_ONLY,
    "concierge-order": {SESSION: "unsupported", UNREGISTERED: "unsupported"},
    "task": {UNREGISTERED: "unauthorized", IN_JOB: None},
    # roost's own ops beyond the spec: a person's terminal on a job.
    "peek": _PERSON_ONLY,
    "keys": _PERSON_ONLY,
    "attach": _PERSON_ONLY,
    "attach-input": _PERSON_ONLY,
    "attach-resize": _PERSON_ONLY,
    # roost's own (issue 30): a job's screen as rows, watched by `roost web`'s pages.
    "screen": _PERSON_ONLY,
    "screen-stop": _PERSON_ONLY,
    "detach": _PERSON_ONLY,
    # roost's own: the agent profiles (read by anyone), and the check of their agents
    # (it runs each agent's version command: a person's).
    "profiles": _ANYONE,
    "doctor": _PERSON_ONLY,
    # roost's own: a job's flight recorder and why its row says what it says (issue 19).
    "timeline": {SESSION: "unsupported", UNREGISTERED: "unsupported"},
    "explain": {SESSION: "unsupported", UNREGISTERED: "unsupported"},
}

# Ops with actions (`task {action}`): each action's own rule, after the op's. An action
# not named here is refused as a bad request.
_BOARD_ALL = {UNREGISTERED: "unauthorized"}
# The board as the person sees it, for reading: anyone's but an unregistered agent's.
_BOARD_READ = {UNREGISTERED: "unauthorized", IN_JOB: None}
_BOARD_PEOPLE = {SESSION: "unsupported", UNREGISTERED: "unauthorized"}
_BOARD_PERSON = {CONCIERGE: "unsupported", SESSION: "unsupported", UNREGISTERED: "unauthorized"}
ACTIONS = {
    "task": {
        "list": _BOARD_READ, "add": _BOARD_ALL, "release": _BOARD_ALL, "done": _BOARD_ALL,
        "claim": {PERSON: "unsupported", CONCIERGE: "unsupported", UNREGISTERED: "unauthorized"},
        "drop": _BOARD_PEOPLE, "assign": _BOARD_PEOPLE, "prepare": _BOARD_PEOPLE, "start": _BOARD_PEOPLE,
        "back": _BOARD_PEOPLE,
        # roost's own: the branch against base, for reading (the hub's, the CLI's, the concierge's,
        # and a session's of its project: the overlap radar points it there, issue 20)
        "diff": _BOARD_ALL,
        # issue 20: claims on paths, a session's for the task it holds, a person's for any
        "claim-paths": _BOARD_ALL, "release-paths": _BOARD_ALL,
        "cleanup": _BOARD_PERSON, "merge": _BOARD_PERSON, "abort": _BOARD_PERSON, "commit": _BOARD_PERSON,
        "approve": _BOARD_PERSON, "verify": _BOARD_PERSON, "pass": _BOARD_PERSON, "comment": _BOARD_PERSON,
        "uncomment": _BOARD_PERSON, "shelve": _BOARD_PERSON, "pr": _BOARD_PERSON,
    },
}

_WHO = {PERSON: "a person's connection", UNREGISTERED: "an agent's connection before its report",
        SESSION: "a session's connection", CONCIERGE: "the concierge's connection",
        IN_JOB: "a process inside a job"}


def refusal(rule, caller):
    """The code `rule` refuses `caller` with, or None when it may call."""
    if caller == IN_JOB:
        return rule.get(IN_JOB, _IN_JOB_REFUSED)
    return rule.get(caller)


_refusal = refusal


def _refused(code, what, caller, inside):
    if caller != IN_JOB:
        return RoostError(code, f"{what} is not for {_WHO[caller]}")
    return RoostError(code, f"{what} is refused: this connection comes from {inside or 'a process inside a job'}, "
                            "and a job's processes are never the person (an agent acts for its job after "
                            "`speak_for`, as the roost CLI does for an agent's commands; what is the "
                            "person's, the person runs from a terminal of their own)")


def check(op_name, caller, args=None, inside=None):
    """Raise the spec's refusal when `caller` may not call `op_name` (or, for an op with
    actions, take `args.action`); an op with no rule is refused to everyone. `inside`:
    for In a job, which job (its text names it)."""
    rule = REFUSED.get(op_name)
    if rule is None:
        raise RoostError(UNAUTHORIZED, f"{op_name} has no rule for who may call it: refused")
    code = _refusal(rule, caller)
    if code is not None:
        raise _refused(code, op_name, caller, inside)
    actions = ACTIONS.get(op_name)
    if actions is None:
        return
    action = (args or {}).get("action")
    rule = actions.get(action) if isinstance(action, str) else None
    if rule is None:
        raise RoostError(BAD_REQUEST, f"{op_name} takes an action: one of {', '.join(sorted(actions))}")
    code = _refusal(rule, caller)
    if code is not None:
        raise _refused(code, f"{op_name} {action}", caller, inside)


def _free_to_call():
    """(op, caller) pairs the table lets through whatever the args: the ops without
    actions, for each caller their row does not refuse. Made once from the table, so
    `allowed` answers a request with one set lookup."""
    return frozenset((op_name, caller) for op_name, rule in REFUSED.items() if op_name not in ACTIONS
                     for caller in EVERYONE if _refusal(rule, caller) is None)


FREE = _free_to_call()


def allowed(op_name, caller):
    """True when `check` would let `caller` call `op_name` with any args; False when it
    must be asked (it may refuse)."""
    return (op_name, caller) in FREE


def is_the_persons(op_name, args=None):
    """The person may call it and a process inside a job may not: what a job's CLI says
    it cannot send rather than sending it."""
    try:
        check(op_name, PERSON, args)
    except RoostError:
        return False
    try:
        check(op_name, IN_JOB, args)
    except RoostError as error:
        return error.code != "bad_request"
    return False
