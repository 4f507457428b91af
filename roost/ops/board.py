"""The `task` op (M47): the shared board, on any connection but an unregistered agent's;
who may take which action is roost.ops.callers' (ACTIONS), checked before this runs.
Each action's arguments are its own row's (@action); the result is {tasks: the board as
the caller sees it, task?, sent?, job?, note?, hash?, workspace?, ...}."""

from roost.board import path_claims
from roost.board.actions import Actor, project_of
from roost.contract import LEFT_OUT, Anything, Choice, Integer, ListOf, Text
from roost.errors import BAD_REQUEST, BLOCKED, CONFLICT, FULL, NOT_FOUND, UNAUTHORIZED, UNSUPPORTED, RoostError
from roost.ops import action, callers, op
from roost.ops.shapes import BOARD_TASK, SEND_OUTCOMES
from roost.spend import usage

TASK_ID = Integer("A task's id (a positive integer, or a string of digits).", minimum=1, digits_ok=True)
MAX_AFTER = 50     # tasks a task may wait on
PATHS = ListOf(Text(), "issue 20: globs relative to the repository (1 to 50), none leaving it.")
# Finding the task `id` names, and a session's touching a task it does not hold.
FINDS = (NOT_FOUND,)
NOT_YOURS = (UNSUPPORTED,)

TASK_RESULT = {
    "tasks": ListOf(BOARD_TASK, "The board as the caller sees it, oldest first."),
    "task": BOARD_TASK.but(optional=True, doc="The task acted on."),
    "sent": Choice(SEND_OUTCOMES, "How the hand-over (or the note) reached its session.", optional=True,
                   nullable=True),
    "job": Anything("M55: the session started {id, name}.", object=True, optional=True),
    "note": Text("How it went, in words.", optional=True),
    "hash": Text("The commands' or the branch tip's hash, for the next call.", optional=True, nullable=True),
    "workspace": Anything("M65: {path, branch, baseRef, baseSha, sourceDirty?}.", object=True, optional=True),
    "order": ListOf(Integer(), "A merge train's tasks in the order they went.", optional=True),
    "diff": Anything("The branch against base {text, truncated, base, tip, branch, baseRef}.", object=True,
                     optional=True),
}


def actor_of(call):
    session = call.session
    if session.caller == callers.CONCIERGE:
        return Actor("concierge")
    if session.caller != callers.SESSION:
        return Actor("user")
    peer = call.services.directory.of_session(session)
    if peer.job is not None and not peer.job.speaks:
        raise RoostError(UNAUTHORIZED, f"job {peer.id} has ended: it speaks for no one")
    return Actor("session", peer, project_of(peer.cwd, call.services.board.tasks))


@action("task", "list", args={"project": Text("M52: a directory in the project's repository (absolute); the "
                                              "person's and the concierge's only.", default=None)},
        doc="The lot (done and dropped ones too).")
def _list(call, actor):
    # M59: a branch merged by hand is marked merged when the board is listed.
    call.services.workspaces.upkeep.notice_merged()
    tasks = call.services.board_actions.visible(actor, call.args["project"] if actor.person else None)
    if actor.person:
        tasks = _with_spend(call, tasks)
    return {"tasks": tasks}


def _with_spend(call, tasks):
    """issue 29: each task's spend, every job it ever had (verify runs and retries too):
    {tokens, usd, unpriced, jobs}, or null when none of its jobs spent what roost reads."""
    spend = call.services.spend
    by_task = {group["key"]: group for group in usage.group(spend.entries(), "task", None, spend.prices())["groups"]}
    shown = []
    for task in tasks:
        group = by_task.get(str(task["id"]))
        shown.append(dict(task, spend=None if group is None else {key: group[key] for key in
                                                                   ("tokens", "usd", "unpriced", "jobs")}))
    return shown


@action("task", "add", args={
    "title": Text("Cut at 200.", min_length=1, trim=True, typed="task title"),
    "detail": Text("Cut at 2000.", typed="task detail", default=None),
    "after": ListOf(TASK_ID, "Tasks on the board it waits on.", what="a list of task ids", max_items=MAX_AFTER,
                    too_many="{name} names at most {max} tasks ({given} given)", default=[]),
    "project": Text("M52: null: for any session; absent: the caller's (a session's is where it works).",
                    nullable=True, default=LEFT_OUT),
    "paths": PATHS.but(default=None),
}, codes=(FULL,), doc="A new task, open.")
def _add(call, actor):
    args = call.args
    paths = path_claims.check_globs(args["paths"]) if args["paths"] is not None else None
    task = call.services.board_actions.add(actor, args["title"], args["detail"], args["after"],
                                           args.get("project"), "project" in args)
    if paths is not None:
        # issue 20: where the task will work, said as it is added
        task["paths"] = {"globs": paths, "by": actor.by}
        call.services.board_actions.changed(actor, task, "paths", ": claims " + ", ".join(paths[:5]))
    return {"task": task}


@action("task", "claim", args={"id": TASK_ID}, codes=FINDS + (BLOCKED, CONFLICT), doc="A session takes it.")
def _claim(call, actor):
    return {"task": call.services.board_actions.claim(actor, call.args["id"])}


@action("task", "done", args={"id": TASK_ID, "result": Text("At most 2000.", typed="result", default=None)},
        codes=FINDS + NOT_YOURS + (CONFLICT,), doc="The owner marks it done (M56: a workspace's runs its verify).")
def _done(call, actor):
    return {"task": call.services.board_actions.done(actor, call.args["id"], call.args["result"])}


@action("task", "release", args={"id": TASK_ID}, codes=FINDS + NOT_YOURS, doc="The owner gives it back.")
def _release(call, actor):
    return {"task": call.services.board_actions.release(actor, call.args["id"])}


@action("task", "drop", args={"id": TASK_ID}, codes=FINDS, doc="Takes an open or claimed task off the board.")
def _drop(call, actor):
    return {"task": call.services.board_actions.drop(actor, call.args["id"])}


@action("task", "assign", args={"id": TASK_ID, "to": Text("A session's id or unique name.", min_length=1)},
        codes=FINDS + NOT_YOURS + (FULL,), doc="Hands an open task to a session (a message there).")
def _assign(call, actor):
    task, sent = call.services.board_actions.assign(actor, call.args["id"], call.args["to"])
    return {"task": task, "sent": sent}


@op("task", by="action", result=TASK_RESULT, codes=(UNAUTHORIZED, BAD_REQUEST))
def task(call):
    actor = actor_of(call)
    result = call.action.fn(call, actor)
    result.setdefault("tasks", call.services.board_actions.visible(actor))
    return result
