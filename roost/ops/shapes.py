"""The shapes more than one op answers with (the spec's "Shared shapes", and roost's
own), in roost.contract's types: rows of jobs, peers, tasks, schedules, events. What a
launch takes (DispatchArgs) is the launcher's (roost.jobs.launch_args)."""

from roost.contract import Anything, Choice, Flag, Integer, ListOf, Number, Shape, Text
from roost.jobs.record import AGENT_STATES, END_STATES

STATES = tuple(dict.fromkeys(AGENT_STATES + END_STATES))
STATUSES = ("busy", "waiting", "idle")
WAITING_FOR = ("dialog", "question", "first-prompt", "limit", "budget")
SEND_OUTCOMES = ("delivered", "queued", "started", "stopped", "not running", "duplicate")
RELATIONS = ("parent", "child", "sibling", "tree", "external")


def maybe(field_type, *args, **kwargs):
    """A field every answer carries, null when it has no value."""
    return field_type(*args, nullable=True, **kwargs)


def absent(field_type, *args, **kwargs):
    """A field an answer may leave out (null when it is there and has no value)."""
    return field_type(*args, optional=True, nullable=True, **kwargs)


TOKENS = Shape({
    "input": Integer("Every input token, cache reads and writes included."), "output": Integer("Reasoning included."),
    "cacheRead": Integer(), "cacheWrite": Integer(),
}, name="Tokens", doc="issue 29: a count of tokens as roost keeps it.")

SPEND = Shape({
    "tokens": TOKENS,
    "usd": maybe(Number, "An estimate at list price; null when a model it used has no price (named in `unpriced`)."),
    "models": ListOf(Text(), "The models it spent on."),
    "unpriced": ListOf(Text(), "Its models without a price."),
    "source": maybe(Text, "Whose records it was read from: claude-code, codex, pi, aider, report."),
    "at": Number("When it was read (ms)."),
}, name="Spend", doc="issue 29: what a job spent, read from its agent's own records (roost.spend); a row's is "
                      "null when roost cannot read them or the job has spent nothing yet.")

BUDGET_HOLD = Shape({
    "budget": Text("Which: job, task, day, or `<provider> day`."), "why": Text(), "at": Number("When it was parked."),
}, name="BudgetHold", doc="issue 29: a job parked at a budget (its row `blocked`, `waitingFor: \"budget\"`) "
                           "until `budget-allow` lifts it; in a row only while it holds.")

SPEND_TOTAL = Shape({
    "tokens": TOKENS, "usd": maybe(Number, "Null when a model in it has no price."),
    "unpriced": ListOf(Text(), "The models in it without a price."),
}, name="SpendTotal", doc="issue 29: tokens and list-price USD added up.")

CONTEXT_INFO = Shape({
    "tokens": maybe(Number, "Estimated tokens in context; null right after a compaction."),
    "window": Number(),
    "percent": maybe(Number, "0-100; null when tokens is unknown."),
}, name="ContextInfo", doc="M8: how full the session's context window is.", open=True)

JOB_ROW = Shape({
    "id": Text(), "cwd": Text(), "kind": Choice(("pi", "shell")), "startedAt": Number(),
    "state": Choice(STATES), "pid": maybe(Integer), "status": maybe(Choice, STATUSES),
    "waitingFor": maybe(Choice, WAITING_FOR, "issue 19: `limit`, stopped at its usage limit; issue 29: `budget`, "
                        "parked at a budget (`budgetHold` says which)."),
    "sessionFile": Text(), "name": Text(), "endedAt": maybe(Number),
    "summary": maybe(Text, "Row text: a status sentence while working, the result or question after."),
    "question": maybe(Text), "choices": ListOf(Text()), "model": maybe(Text), "thinking": maybe(Text),
    "context": maybe(Anything, "M8: context window use as last reported (ContextInfo)."),
    "error": maybe(Text), "stateSince": Number("When the job entered its current state."),
    "reaped": Flag("DM-4: stopped for idleness; attaching or replying starts it again."),
    "pinned": Flag("AV-K7: listed first and never reaped."),
    "order": maybe(Number, "AV-K13: the user's position within its group."),
    "orderKey": maybe(Text, "The section the order belongs to."),
    "resetsAt": maybe(Number, "issue 19: when the usage limit it waits at resets (ms)."),
    "queued": Number("M48: user replies waiting for it."),
    "usage": absent(Anything, "M24: what the session spent, as last reported."),
    "parentSession": absent(Text, "M9: the session that spawned this one."),
    "rootSession": absent(Text, "M9: its spawn tree's root."),
    "parentOpen": absent(Flag, "M13: someone holds the parent session now."),
    "agent": absent(Text, "M18: the agent it runs as."),
    "prs": absent(ListOf, Anything(), "M16: the session's pull requests."),
    "worktree": absent(Anything, "M10: the session's own git worktree."),
    "fanout": absent(Text, "M26: sessions started together for one task share this id."),
    "profile": absent(Text, "M29: the agent that runs it: a profile's name, or shell."),
    "schedule": absent(Text, "M39: the schedule that started it."),
    "capabilities": absent(ListOf, Text(), "M31: what its agent said it can do in its hello."),
    "role": absent(Choice, ("concierge",), "M44: the hub's own agent (in `list` with `all` only)."),
    "suggested": absent(Anything, "M45: the concierge's suggested answer {text, why, at}."),
    "task": absent(Text, "M48: the task it was started on (one line)."),
    "person": absent(Flag, "issue 16: the person's own shell."),
    "sandboxed": absent(Flag, "issue 26: it runs in a jail of its own (false: without one; left out before "
                              "its first start)."),
    "unreadSince": absent(Number, "Since when its screen matched none of its profile's patterns."),
    "held": absent(Text, "A person attached has typed a line not yet submitted."),
    "spend": SPEND.but(nullable=True),
    "budgetHold": BUDGET_HOLD.but(optional=True, nullable=True),
}, name="JobRow")

PEER_ROW = Shape({
    "id": Text(), "name": Text(), "relation": Choice(RELATIONS), "role": Choice(("job", "foreground")),
    "state": maybe(Choice, STATES + ("live",)), "status": maybe(Choice, STATUSES),
    "waitingFor": maybe(Choice, WAITING_FOR), "summary": maybe(Text), "question": maybe(Text), "cwd": Text(),
}, name="PeerRow", doc="M9: a session an agent may message.")

SEND_RESULT = Shape({
    "outcome": Choice(SEND_OUTCOMES, "delivered: handed to it; queued: it is busy or starting; started: it was "
                      "ended and starts again; duplicate (M43): the same text went to it a moment ago"),
    "id": Text(), "name": Text(), "relation": Choice(RELATIONS),
    "dialog": Flag("The target is waiting on a dialog; the message waits until it is answered.", optional=True),
}, name="SendResult")

SCHEDULE_ROW = Shape({
    "name": Text(), "when": Text(), "task": maybe(Text), "agent": Text("M40: \"shell\" or a profile's name."),
    "cwd": Text(), "model": maybe(Text), "paused": Flag(), "catchUp": Flag(), "nextAt": maybe(Number),
    "lastRunAt": maybe(Number), "lastJob": maybe(Text), "lastSkip": maybe(Anything, "{at, why, code?}"),
    "target": absent(Text, "roost's own: the session it tells `text` (instead of a launch)."),
    "targetName": absent(Text), "text": absent(Text),
}, name="ScheduleRow", doc="M39: a schedule as the hub and the CLI show it.")

STANDING_ORDER = Shape({
    "id": Integer(), "text": Text(), "when": maybe(Text), "by": Choice(("user", "concierge")),
    "byId": absent(Text), "at": Number(), "lastAt": maybe(Number), "nextAt": maybe(Number), "count": Integer(),
}, name="StandingOrder", doc="M46: a standing order the concierge keeps.")

CONCIERGE_POLICY = Shape({
    "answer": Choice(("never", "routine", "always")), "act": Flag(),
}, name="ConciergePolicy", open=True)

CONCIERGE_STATUS = Shape({
    "on": Flag(), "id": maybe(Text), "name": maybe(Text), "state": maybe(Choice, STATES),
    "status": maybe(Choice, STATUSES), "summary": maybe(Text), "policy": CONCIERGE_POLICY,
    "answered": Integer("M45: answers it gave in the user's place."), "orders": Integer("M46: standing orders kept."),
}, name="ConciergeStatus", doc="M44: how the concierge stands.")

ROOST_EVENT = Shape({
    "seq": Integer(), "at": Number(), "kind": Text(), "id": maybe(Text), "name": maybe(Text), "text": Text(),
    "who": absent(Text), "whoId": absent(Text),
}, name="RoostEvent", doc="M43: one event of the feed; each kind adds fields of its own.", open=True)

WORKSPACE = Shape({
    "path": Text(), "branch": Text(), "baseRef": Text(), "baseSha": Text(), "stage": Text(),
    "note": absent(Text, "Why it is at its stage: what failed, what it waits for (roost web's review shows it)."),
}, name="Workspace", doc="M54: a task's own worktree and its stage; the board adds fields as a task moves.",
    open=True)

BOARD_TASK = Shape({
    "id": Integer(), "title": Text(), "detail": maybe(Text), "state": Choice(("open", "claimed", "done", "dropped")),
    "after": ListOf(Integer()), "by": Anything(object=True), "at": Number(), "owner": maybe(Anything, object=True),
    "claimedAt": maybe(Number), "doneAt": maybe(Number), "result": maybe(Text),
    "assigned": maybe(Anything, object=True), "project": maybe(Text), "waiting": ListOf(Anything(object=True)),
    "workspace": WORKSPACE.but(optional=True),
    "paths": absent(Anything, "issue 20: the paths it claims {globs, by}.", object=True),
    "overlaps": absent(Anything, "issue 20: what the radar found it shares with others."),
    "spend": Shape({
        "tokens": TOKENS, "usd": maybe(Number), "unpriced": ListOf(Text()),
        "jobs": ListOf(Text(), "Every job it ever had that spent (its verify runs and retries too)."),
    }, doc="issue 29, in the person's list only: what its jobs spent; null when none spent what roost reads.",
        optional=True, nullable=True),
}, name="BoardTask", doc="M47: a task of the board.", open=True)

JOB_AND_NAME = {"id": Text(), "name": Text()}
