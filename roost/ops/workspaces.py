"""The `task` op's workspace actions (M54-M60, M65): each declares its arguments and
calls the board's workspaces (`call.services.workspaces`); who may take which is
roost.ops.callers' (ACTIONS), checked before the op runs. Beyond the spec: `diff` (the
branch against base, as a person reviews it), merge's `train` (with `dry`: its order and
why), and the claims on paths of issue 20 (`claim-paths`, `release-paths`)."""

from roost.board import path_claims
from roost.concierge import policy
from roost.concierge.desk import without_identity
from roost.contract import Choice, Flag, Integer, ListOf, Number, Shape, Text
from roost.errors import BAD_REQUEST, BLOCKED, BUSY, CONFLICT, FULL, INTERNAL, NOT_FOUND, POLICY, UNSUPPORTED
from roost.errors import bad_request
from roost.jobs.launch_args import DISPATCH_ARGS
from roost.ops import action
from roost.ops.board import FINDS, PATHS, TASK_ID
from roost.ops.jobs import STARTS

ID = {"id": TASK_ID}
# What git may answer (roost.git.errors), and a stage that does not fit (board.stages).
GIT = (BAD_REQUEST, NOT_FOUND, CONFLICT, BUSY, INTERNAL)
STAGE = (CONFLICT, BUSY)


def _spaces(call):
    return call.services.workspaces


@action("task", "prepare", args=ID, codes=FINDS + GIT + STAGE + (BLOCKED, POLICY),
        doc="M65: the daemon makes the task's worktree and says where.")
def _prepare(call, actor):
    if actor.kind == "concierge":
        policy.check_act(call.services.concierge.policy())     # M57: as for its start
    task, workspace = _spaces(call).preparations.prepare(actor, call.args["id"])
    return {"task": task, "workspace": workspace}


@action("task", "start", args=dict(ID, launch=DISPATCH_ARGS.but(doc="An agent launch whose cwd is in the worktree.")),
        codes=FINDS + GIT + STAGE + STARTS + (BLOCKED, POLICY, UNSUPPORTED),
        doc="M55: starts a session in the prepared worktree.")
def _start(call, actor):
    launch = call.args["launch"]
    if actor.kind == "concierge":
        # M57: the concierge starts a task only where its policy says act, and the
        # session it starts carries neither its role nor its identity.
        policy.check_act(call.services.concierge.policy())
        launch = without_identity(launch)
    task, job = _spaces(call).preparations.start(actor, call.args["id"], launch)
    result = {"task": task}
    if job is not None:
        result["job"] = {"id": job["id"], "name": job["name"]}
    return result


@action("task", "merge", args={
    "id": TASK_ID.but(default=None, doc="Required unless `train`."),
    "mode": Choice(("ff", "no-ff"), default="ff"),
    "train": ListOf(TASK_ID, "roost's own: several tasks merged one after another.", what="a list of task ids",
                    default=None),
    "dry": Flag("With train: its order and why, nothing merged.", default=False),
}, codes=FINDS + GIT + STAGE, doc="M55: merges the task's branch into base, locally.")
def _merge(call, actor):
    args = call.args
    if args["train"] is not None:
        ids = list(args["train"])
        if args["id"] is not None and args["id"] not in ids:
            ids.insert(0, args["id"])
        tasks, note = _spaces(call).merges.train(actor, ids, args["mode"], dry=args["dry"])
        return {"task": tasks[-1], "note": note, "order": [task["id"] for task in tasks]}
    if args["id"] is None:
        raise bad_request("id is required")
    task, note = _spaces(call).merges.merge(actor, args["id"], args["mode"])
    return {"task": task, "note": note}


@action("task", "back", args=dict(ID, note=Text("Cut at 500.", typed="note", default=None)),
        codes=FINDS + STAGE + (FULL, UNSUPPORTED), doc="M55: returns it to working and tells its holder.")
def _back(call, actor):
    task, sent = _spaces(call).reviews.back(actor, call.args["id"], call.args["note"])
    result = {"task": task}
    if sent is not None:
        result["sent"] = sent
    return result


@action("task", "abort", args=ID, codes=FINDS + GIT + STAGE, doc="M55: gives up a conflicted sync.")
def _abort(call, actor):
    task, note = _spaces(call).abort(actor, call.args["id"])
    return {"task": task, "note": note}


@action("task", "commit", args=dict(ID, message=Text(default=None)), codes=FINDS + GIT + STAGE,
        doc="M55: commits what its worktree holds.")
def _commit(call, actor):
    task, note = _spaces(call).commit(actor, call.args["id"], call.args["message"])
    call.services.radar.soon(task["id"])         # what it touches may have changed
    return {"task": task, "note": note}


@action("task", "claim-paths", args=dict(ID, paths=PATHS), codes=FINDS + (UNSUPPORTED,),
        doc="issue 20: claims paths for the task (a session's for the task it holds).")
def _claim_paths(call, actor):
    task = call.services.board_actions.task(actor, call.args["id"])
    globs = path_claims.check_globs(call.args["paths"])
    path_claims.claim(task, actor, globs)
    call.services.board_actions.changed(actor, task, "paths", ": claims " + ", ".join(globs[:5])
                                        + (" ..." if len(globs) > 5 else ""))
    return {"task": task}


@action("task", "release-paths", args=ID, codes=FINDS + (UNSUPPORTED,), doc="issue 20: gives its claim on paths up.")
def _release_paths(call, actor):
    task = call.services.board_actions.task(actor, call.args["id"])
    path_claims.release(task, actor)
    call.services.board_actions.changed(actor, task, "paths", ": its claim on paths given up")
    return {"task": task}


@action("task", "approve", args=dict(ID, dry=Flag("Show the commands only.", default=False),
                                     hash=Text("The hash the dry run showed.", default=None)),
        codes=FINDS + GIT, doc="M56: approves the repository's commands.")
def _approve(call, actor):
    task, note, digest = _spaces(call).checks.approve(actor, call.args["id"], call.args["dry"], call.args["hash"])
    return {"task": task, "note": note, "hash": digest}


@action("task", "verify", args=ID, codes=FINDS + GIT + STAGE, doc="M56: runs the verify command again.")
def _verify(call, actor):
    return {"task": _spaces(call).checks.verify_again(actor, call.args["id"])}


@action("task", "pass", args=ID, codes=FINDS + STAGE, doc="M56: accepts a failure.")
def _pass(call, actor):
    return {"task": _spaces(call).checks.accept(actor, call.args["id"])}


COMMENT = Shape({
    "file": Text("A path in the diff.", min_length=1), "line": Integer(minimum=0),
    "text": Text(min_length=1, typed="comment text"),     # typed to the holder on `back`
    "lineText": Text("The line it is on, as shown.", default=None), "tip": Text(default=None),
}, prefix="comment.")


@action("task", "comment", args=dict(ID, comment=COMMENT), codes=FINDS + (FULL,),
        doc="M58: a review comment on a line of the task's diff.")
def _comment(call, actor):
    comment = {name: value for name, value in call.args["comment"].items() if value is not None}
    return {"task": _spaces(call).reviews.comment(actor, call.args["id"], comment)}


@action("task", "uncomment", args=dict(ID, index=Integer("Its index (or `comment`).", default=None),
                                       comment=Shape({"file": Text(), "line": Integer(), "at": Number()},
                                                     prefix="comment.", default=None)),
        codes=FINDS, doc="M58: withdraws a review comment.")
def _uncomment(call, actor):
    index, comment = call.args["index"], call.args["comment"]
    if index is None and comment is None:
        raise bad_request("uncomment names the comment: comment {file, line, at}, or its index")
    return {"task": _spaces(call).reviews.uncomment(actor, call.args["id"], index, comment)}


@action("task", "shelve", args=ID, codes=FINDS + GIT + STAGE, doc="M59: removes a clean worktree, keeps the branch.")
def _shelve(call, actor):
    task, note = _spaces(call).shelve(actor, call.args["id"])
    return {"task": task, "note": note}


@action("task", "cleanup", args={"dry": Flag("List only.", default=False)}, codes=GIT,
        doc="M59: removes (dry: lists) worktrees and verify logs left behind. No id.")
def _cleanup(call, actor):
    return {"note": _spaces(call).upkeep.cleanup(actor, call.args["dry"])}


@action("task", "pr", args=dict(ID, dry=Flag("Say what it would do and the tip as `hash`.", default=False),
                                hash=Text("The tip shown by the dry run.", default=None)),
        codes=FINDS + GIT + STAGE, doc="M60: pushes the branch and opens a pull request.")
def _pr(call, actor):
    task, note, tip = _spaces(call).exits.pull_request(actor, call.args["id"], call.args["dry"], call.args["hash"])
    return {"task": task, "note": note, "hash": tip}


@action("task", "diff", args=ID, codes=FINDS + GIT, doc="roost's own: the branch against base, as a person reviews it.")
def _diff(call, actor):
    task, found = _spaces(call).diff(actor, call.args["id"])
    return {"task": task, "diff": found}
