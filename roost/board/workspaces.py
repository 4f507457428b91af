"""A task's own worktree and what is done in it (M54-M60, M65): the parts that make it
(preparing), check it (verifying), review it, merge it (merging, with the merge train),
send it out (exits) and keep the lot tidy (upkeep), and the actions of its own here: the
holder's `done`, `commit`, `abort`, `shelve` and the review `diff`.

Every git operation goes through roost.git. Each task's workspace is changed by one
greenlet at a time (roost.board.locks); its stage only through roost.board.stages. What
is long (a verify, a setup) runs as a roost job, never on the loop. git works in a
task's worktree only through its Checkout (`task_git.checkout(task)`, from the repository's own
record): a worktree whose `.git` was made to point elsewhere is refused, and the task
goes to `failed` with a note that says why.
"""

import logging
import os

from roost import git
from roost.board import places, task_git
from roost.errors import BUSY, RoostError, bad_request

log = logging.getLogger(__name__)


class Workspaces:
    """The holder's own actions on its workspace, and the parts the ops reach through it
    (each built once in roost.daemon.services and handed only what it uses)."""

    def __init__(self, home, board, actions, stages, locks, checks, preparations, reviews, merges, exits, upkeep):
        self.home = home
        self.board = board
        self.actions = actions
        self.stages = stages
        self.locks = locks
        self.checks = checks
        self.preparations = preparations
        self.reviews = reviews
        self.merges = merges
        self.exits = exits
        self.upkeep = upkeep

    def start(self):
        """At the daemon's start: tasks.json and each repository's worktrees agree again
        (what a daemon killed half-way left is finished or undone), holds re-armed,
        verify and setup jobs followed again."""
        self.upkeep.reconcile()

    # -- the holder's done, commit, abort, shelve, diff ------------------------------------

    def finish(self, actor, task, result=None):
        """M55: the holder's `done` (or a person's for it) of a task in its own worktree
        (else None: not this part's) needs a clean worktree; it sends the task to verify
        (an approved command) or straight to review."""
        if not task.get("workspace"):
            return None
        with self.locks.lock(task["id"]):
            workspace = task_git.workspace(task, "working", "conflict", "failed")
            task_git.present(task)
            place = task_git.checkout(task)
            changes = git.uncommitted_changes(place)
            if changes:
                shown = ", ".join(path for _status, path in changes[:5]) + (" ..." if len(changes) > 5 else "")
                raise bad_request(f"task #{task['id']}'s worktree has uncommitted changes ({shown}): commit "
                                  f"them first (`git commit`, or `roost task commit {task['id']}`)")
            if git.worktree_head(place)[2]:
                raise bad_request(f"task #{task['id']}'s worktree is in the middle of a merge: conclude it first")
            task["result"] = (result or "")[:2000] or task.get("result")
            plan = self.checks.verify_plan(task)
            if plan.ready:
                self.stages.move(task, "verifying", note=None, actor=actor)
                self.checks.run_verify(task, plan)
            else:
                # no verify: what the person reviews is the branch's commit it was done at
                self.stages.move(task, "review", note=plan.why or None, actor=actor,
                                 verifiedTip=git.ref_sha(task_git.repository(task), workspace["branch"]))
        holder = task.get("owner")
        if actor.person and holder:
            self.actions.tell(holder["id"], f"Task #{task['id']} ({task['title']}) was sent to "
                                            f"{task['workspace']['stage']} by the {actor.kind}.")
        return task

    def commit(self, actor, task_id, message=None):
        """M55: commit what the worktree holds; a sync whose conflicts were resolved by
        hand is concluded by it, and the task goes back to review."""
        task = self.actions.task(actor, task_id)
        with self.locks.lock(task_id):
            workspace = task_git.present(task)
            if workspace["stage"] in ("verifying", "merging"):
                raise RoostError(BUSY, f"task #{task_id} is {workspace['stage']}: commit when that is over")
            place = task_git.checkout(task)
            was_merging = git.worktree_head(place)[2]
            sha = git.commit_all(place, message or f"#{task['id']} {task['title']}")
            if sha is None:
                return task, "nothing to commit"
            note = f"committed {sha[:12]}"
            if was_merging and workspace["stage"] == "conflict":
                self.stages.move(task, "review", note="the sync's conflicts were resolved", actor=actor,
                                 verifiedTip=sha)
                note += ": the sync's conflicts are resolved"
            else:
                self.board.save()
            return task, note

    def abort(self, actor, task_id):
        """M55: give up a conflicted sync; the worktree is as it was before it."""
        task = self.actions.task(actor, task_id)
        with self.locks.lock(task_id):
            workspace = task_git.workspace(task, "conflict")
            aborted = git.abort_sync(task_git.checkout(task)) if os.path.isdir(workspace.get("path") or "") else False
            note = "the sync was given up" if aborted else "no sync was in progress"
            self.stages.move(task, "review", note=note, actor=actor)
        self.actions.tell_holder(task, f"Task #{task['id']} ({task['title']}): the merge's conflicting sync was given "
                               "up; your branch is as it was before it.")
        return task, note

    def shelve(self, actor, task_id):
        """M59: remove a clean worktree, keep the branch; the claim is given back."""
        task = self.actions.task(actor, task_id)
        with self.locks.lock(task_id):
            workspace = task_git.workspace(task, "working", "review", "failed", "conflict")
            repo = task_git.repository(task)
            if os.path.isdir(workspace["path"]) or git.find_worktree(repo, workspace["path"]):
                git.remove_worktree(repo, workspace["path"])     # refused (dirty) when work would be lost
            self.preparations.forget_hold(task)
            self.actions.give_back(task, "shelved", actor=actor)
            self.stages.move(task, "shelved", note=f"branch {workspace['branch']} kept", actor=actor)
        return task, f"the worktree was removed; branch {workspace['branch']} is kept"

    def diff(self, actor, task_id):
        """The branch against base, as a person reviews it."""
        task = self.actions.task(actor, task_id)
        workspace = task_git.workspace(task)
        repo = task_git.repository(task)
        if git.ref_sha(repo, workspace["branch"]) is None:
            raise bad_request(f"task #{task_id}'s branch {workspace['branch']} is gone")
        found = git.diff(repo, workspace["baseRef"], workspace["branch"])
        return task, {"text": found.text, "truncated": found.truncated, "base": found.base, "tip": found.tip,
                      "branch": workspace["branch"], "baseRef": workspace["baseRef"]}

    def under_roost(self, path):
        return places.is_ours(self.home, path)
