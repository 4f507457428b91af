"""The `task` op (M47): the shared board, on any connection but an unregistered agent's;
who may take which action is roost.ops.callers' (ACTIONS), checked before this runs.
The result is {tasks: the board as the caller sees it, task?, sent?, job?, note?, hash?,
workspace?}."""

from roost.board import path_claims
from roost.board.actions import Actor, project_of
from roost.errors import RoostError
from roost.ops import args as read
from roost.ops import callers, op
from roost.spend import usage

# Actions of a task's workspace (M54-M60): handlers registered by roost.ops.workspaces.
WORKSPACE_ACTIONS = {}


def actor_of(call):
    session = call.session
    if session.caller == callers.CONCIERGE:
        return Actor("concierge")
    if session.caller != callers.SESSION:
        return Actor("user")
    peer = call.services.directory.of_session(session)
    if peer.job is not None and not peer.job.speaks:
        raise RoostError("unauthorized", f"job {peer.id} has ended: it speaks for no one")
    return Actor("session", peer, project_of(peer.cwd, call.services.board.tasks))


def _task_id(call):
    return read.integer(call.args, "id", minimum=1, digits_ok=True)


def _list(call, actor):
    project = call.args.get("project")
    # M59: a branch merged by hand is marked merged when the board is listed.
    call.services.workspaces.upkeep.notice_merged()
    tasks = call.services.board_actions.visible(actor, project if actor.person else None)
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


MAX_AFTER = 50     # tasks a task may wait on


def _add(call, actor):
    after = call.args.get("after") or []
    if not isinstance(after, list):
        raise RoostError("bad_request", "after must be a list of task ids")
    if len(after) > MAX_AFTER:
        raise RoostError("bad_request", f"after names at most {MAX_AFTER} tasks ({len(after)} given)")
    ids = [read.integer({"id": item}, "id", minimum=1, digits_ok=True) for item in after]
    paths = path_claims.check_globs(call.args["paths"]) if call.args.get("paths") is not None else None
    task = call.services.board_actions.add(actor, read.text(call.args, "title", min_length=1, trim=True,
                                                     typed="task title"),
                                           read.text(call.args, "detail", default=None, typed="task detail"), ids,
                                           call.args.get("project"), "project" in call.args)
    if paths is not None:
        # issue 20: where the task will work, said as it is added
        task["paths"] = {"globs": paths, "by": actor.by}
        call.services.board_actions.changed(actor, task, "paths", ": claims " + ", ".join(paths[:5]))
    return {"task": task}


def _claim(call, actor):
    return {"task": call.services.board_actions.claim(actor, _task_id(call))}


def _done(call, actor):
    return {"task": call.services.board_actions.done(actor, _task_id(call), read.text(call.args, "result", default=None,
                                                                                               typed="result"))}


def _release(call, actor):
    return {"task": call.services.board_actions.release(actor, _task_id(call))}


def _drop(call, actor):
    return {"task": call.services.board_actions.drop(actor, _task_id(call))}


def _assign(call, actor):
    task, sent = call.services.board_actions.assign(actor, _task_id(call), read.text(call.args, "to", min_length=1))
    return {"task": task, "sent": sent}


PLAIN_ACTIONS = {"list": _list, "add": _add, "claim": _claim, "done": _done, "release": _release,
                 "drop": _drop, "assign": _assign}


@op("task")
def task(call):
    actor = actor_of(call)
    action = call.args["action"]       # checked by roost.ops.callers
    handler = PLAIN_ACTIONS.get(action) or WORKSPACE_ACTIONS.get(action)
    if handler is None:
        raise RoostError("unsupported", f"this roost does not offer task {action} yet")
    result = handler(call, actor)
    result.setdefault("tasks", call.services.board_actions.visible(actor))
    return result
