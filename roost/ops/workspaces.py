"""The `task` op's workspace actions (M54-M60, M65): each reads its arguments and calls
the board's workspaces (`call.services.workspaces`); who may take which is roost.ops.
callers' (ACTIONS), checked before the op runs. Beyond the spec: `diff` (the branch
against base, as a person reviews it), merge's `train` (with `dry`: its order and why),
and the claims on paths of issue 20 (`claim-paths`, `release-paths`)."""

from roost.board import path_claims
from roost.concierge import policy
from roost.concierge.desk import without_identity
from roost.errors import bad_request
from roost.ops import args as read
from roost.ops.board import WORKSPACE_ACTIONS


def _id(call):
    return read.integer(call.args, "id", minimum=1, digits_ok=True)


def _ids(call, name):
    value = call.args.get(name)
    if not isinstance(value, list):
        raise bad_request(f"{name} must be a list of task ids")
    return [read.integer({"id": item}, "id", minimum=1, digits_ok=True) for item in value]


def _spaces(call):
    return call.services.workspaces


def _prepare(call, actor):
    if actor.kind == "concierge":
        policy.check_act(call.services.concierge.policy())     # M57: as for its start
    task, workspace = _spaces(call).preparations.prepare(actor, _id(call))
    return {"task": task, "workspace": workspace}


def _start(call, actor):
    launch = read.mapping(call.args, "launch")
    if actor.kind == "concierge":
        # M57: the concierge starts a task only where its policy says act, and the
        # session it starts carries neither its role nor its identity.
        policy.check_act(call.services.concierge.policy())
        launch = without_identity(launch)
    task, job = _spaces(call).preparations.start(actor, _id(call), launch)
    result = {"task": task}
    if job is not None:
        result["job"] = {"id": job["id"], "name": job["name"]}
    return result


def _merge(call, actor):
    mode = read.choice(call.args, "mode", ("ff", "no-ff"), default="ff")
    if call.args.get("train") is not None:
        ids = _ids(call, "train")
        if call.args.get("id") is not None and _id(call) not in ids:
            ids.insert(0, _id(call))
        tasks, note = _spaces(call).merges.train(actor, ids, mode, dry=read.flag(call.args, "dry"))
        return {"task": tasks[-1], "note": note, "order": [task["id"] for task in tasks]}
    task, note = _spaces(call).merges.merge(actor, _id(call), mode)
    return {"task": task, "note": note}


def _back(call, actor):
    note = read.text(call.args, "note", default=None, typed="note")
    task, sent = _spaces(call).reviews.back(actor, _id(call), note)
    result = {"task": task}
    if sent is not None:
        result["sent"] = sent
    return result


def _abort(call, actor):
    task, note = _spaces(call).abort(actor, _id(call))
    return {"task": task, "note": note}


def _commit(call, actor):
    task, note = _spaces(call).commit(actor, _id(call), read.text(call.args, "message", default=None))
    call.services.radar.soon(task["id"])         # what it touches may have changed
    return {"task": task, "note": note}


def _claim_paths(call, actor):
    task = call.services.board_actions.task(actor, _id(call))
    globs = path_claims.check_globs(call.args.get("paths"))
    path_claims.claim(task, actor, globs)
    call.services.board_actions.changed(actor, task, "paths", ": claims " + ", ".join(globs[:5])
                                        + (" ..." if len(globs) > 5 else ""))
    return {"task": task}


def _release_paths(call, actor):
    task = call.services.board_actions.task(actor, _id(call))
    path_claims.release(task, actor)
    call.services.board_actions.changed(actor, task, "paths", ": its claim on paths given up")
    return {"task": task}


def _approve(call, actor):
    task, note, digest = _spaces(call).checks.approve(actor, _id(call), read.flag(call.args, "dry"),
                                                      read.text(call.args, "hash", default=None))
    return {"task": task, "note": note, "hash": digest}


def _verify(call, actor):
    return {"task": _spaces(call).checks.verify_again(actor, _id(call))}


def _pass(call, actor):
    return {"task": _spaces(call).checks.accept(actor, _id(call))}


def _comment(call, actor):
    comment = read.mapping(call.args, "comment")
    if isinstance(comment.get("text"), str):
        read.check_typed(comment["text"], "comment text")    # typed to the holder on `back`
    return {"task": _spaces(call).reviews.comment(actor, _id(call), comment)}


def _uncomment(call, actor):
    index = call.args.get("index")
    comment = call.args.get("comment")
    if index is None and comment is None:
        raise bad_request("uncomment names the comment: comment {file, line, at}, or its index")
    return {"task": _spaces(call).reviews.uncomment(actor, _id(call), index, comment)}


def _shelve(call, actor):
    task, note = _spaces(call).shelve(actor, _id(call))
    return {"task": task, "note": note}


def _cleanup(call, actor):
    return {"note": _spaces(call).upkeep.cleanup(actor, read.flag(call.args, "dry"))}


def _pr(call, actor):
    task, note, tip = _spaces(call).exits.pull_request(actor, _id(call), read.flag(call.args, "dry"),
                                                       read.text(call.args, "hash", default=None))
    return {"task": task, "note": note, "hash": tip}


def _diff(call, actor):
    task, found = _spaces(call).diff(actor, _id(call))
    return {"task": task, "diff": found}


WORKSPACE_ACTIONS.update({
    "prepare": _prepare, "start": _start, "merge": _merge, "back": _back, "abort": _abort, "commit": _commit,
    "approve": _approve, "verify": _verify, "pass": _pass, "comment": _comment, "uncomment": _uncomment,
    "shelve": _shelve, "cleanup": _cleanup, "pr": _pr, "diff": _diff,
    "claim-paths": _claim_paths, "release-paths": _release_paths,
})
