"""A task's own worktree and what is done in it (M54-M60, M65): the parts that make it
(preparing), check it (verifying), review it, merge it (merging, with the merge train),
send it out (exits) and keep the lot tidy (upkeep), and the actions of its own here: the
holder's `done`, `commit`, `abort`, `shelve` and the review `diff`.

Every git operation goes through roost.git. Each task's workspace is changed by one
greenlet at a time (`lock(task_id)`); its stage only through roost.board.stages. What
is long (a verify, a setup) runs as a roost job, never on the loop. git works in a
task's worktree only through its Checkout (`checkout(task)`, from the repository's own
record): a worktree whose `.git` was made to point elsewhere is refused, and the task
goes to `failed` with a note that says why.
"""

import collections
import contextlib
import logging
import os

import gevent.lock

from roost import git
from roost.board import places
from roost.board.exits import Exits
from roost.board.merging import Merges
from roost.board.preparing import Preparations
from roost.board.review import Reviews
from roost.board.stages import ACTIVE as ACTIVE_STAGES
from roost.board.stages import Stages
from roost.board.upkeep import Upkeep
from roost.board.verifying import Checks
from roost.errors import BUSY, RoostError, bad_request
from roost.git.errors import GitError

log = logging.getLogger(__name__)


class Workspaces:
    """The workspaces of the board's tasks; `launcher` (roost.jobs.launcher) starts their
    jobs."""

    def __init__(self, home, board, actions, registry, config, launcher, admission):
        self.home = home
        self.admission = admission     # roost.spend.admission: budgets, plan windows, maxLive (issue 29)
        self.board = board
        self.actions = actions
        self.registry = registry
        self.config = config
        self.launcher = launcher
        self.stages = Stages(board, actions)
        self._locks = collections.defaultdict(gevent.lock.RLock)
        self.checks = Checks(self)
        self.preparations = Preparations(self)
        self.reviews = Reviews(self)
        self.merges = Merges(self)
        self.exits = Exits(self)
        self.upkeep = Upkeep(self)

    def start(self):
        """At the daemon's start: tasks.json and each repository's worktrees agree again
        (what a daemon killed half-way left is finished or undone), holds re-armed,
        verify and setup jobs followed again."""
        self.upkeep.reconcile()

    # -- what the parts share -----------------------------------------------------------

    @contextlib.contextmanager
    def lock(self, task_id):
        """The task's workspace, one greenlet at a time; a git run refused there because
        the worktree's .git was tampered with fails the task on its way out."""
        with self._locks[task_id]:
            try:
                yield
            except GitError as error:
                if error.reason == "tampered":
                    self.fail_tampered(self.board.get(task_id), error)
                raise

    def checkout(self, task):
        """The task's worktree as its repository records it (roost.git.checkouts)."""
        return git.checkout_of(self.repository(task), task["workspace"]["path"])

    def unverified(self, task):
        """None when the task's branch is at `workspace.verifiedTip` (the commit its
        verify passed on, or with no verify the one it was done at: what the person
        reviews), else why not, in words. Merge, the train and pr land only that commit."""
        workspace = task["workspace"]
        verified = workspace.get("verifiedTip")
        tip = git.ref_sha(self.repository(task), workspace["branch"])
        again = (f"verify it again (`roost task verify {task['id']}`) or send it back "
                 f"(`roost task back {task['id']}`)")
        if not verified:
            return f"branch {workspace['branch']} has no verified tip on record: {again}"
        if tip != verified:
            return (f"branch {workspace['branch']} moved since it was verified and reviewed "
                    f"({verified[:12]} -> {str(tip)[:12]}): {again}")
        return None

    def fail_tampered(self, task, error):
        """Stage failed, with the refusal as its note (once: its stage may be failed already)."""
        workspace = (task or {}).get("workspace") or {}
        if workspace.get("stage") in ACTIVE_STAGES:
            log.warning("task #%s: %s", task["id"], error.text)
            self.stages.move(task, "failed", note=f"refused: {error.text}")

    def repository(self, task):
        """The task's repository (its project), or bad_request."""
        if not task.get("project"):
            raise bad_request(f"task #{task['id']} is for any session: it has no repository to work in "
                              "(add it with a project)")
        repo = git.repository_of(task["project"])
        if repo is None:
            raise bad_request(f"task #{task['id']}'s project {task['project']} is no git repository any more")
        if repo.bare:
            raise bad_request(f"{repo.root} is a bare repository: it has no checked-out branch to start from")
        return repo

    def workspace(self, task, *stages):
        """The task's workspace, refused when it has none or (with `stages`) is not in one
        of them."""
        workspace = task.get("workspace")
        if not workspace or not workspace.get("stage"):
            raise bad_request(f"task #{task['id']} has no workspace: prepare and start it first")
        if stages and workspace["stage"] not in stages:
            raise bad_request(f"task #{task['id']} is {workspace['stage']}, not {' or '.join(stages)}")
        return workspace

    def present(self, task):
        """The workspace, refused unless its worktree is there."""
        workspace = self.workspace(task)
        if workspace["stage"] in ("shelved", "merged") or not os.path.isdir(workspace.get("path") or ""):
            raise bad_request(f"task #{task['id']} is {workspace['stage']}: its worktree is not there")
        return workspace

    def holder(self, task):
        """{id, name} of the live session that holds the task, or None."""
        owner = task.get("owner")
        if task["state"] == "claimed" and owner and self.actions.holds(owner["id"]):
            return owner
        return None

    def tell_holder(self, task, text):
        """A note to the task's live holder: how it went, or None (no live holder)."""
        holder = self.holder(task)
        return self.actions.tell(holder["id"], text) if holder else None

    def setting(self, name, default):
        value = self.config.get(name)
        return value if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0 else default

    # -- the holder's done, commit, abort, shelve, diff ------------------------------------

    def finish(self, actor, task, result=None):
        """M55: the holder's `done` (or a person's for it) needs a clean worktree; it
        sends the task to verify (an approved command) or straight to review."""
        with self.lock(task["id"]):
            workspace = self.workspace(task, "working", "conflict", "failed")
            self.present(task)
            place = self.checkout(task)
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
                                 verifiedTip=git.ref_sha(self.repository(task), workspace["branch"]))
        holder = task.get("owner")
        if actor.person and holder:
            self.actions.tell(holder["id"], f"Task #{task['id']} ({task['title']}) was sent to "
                                            f"{task['workspace']['stage']} by the {actor.kind}.")
        return task

    def commit(self, actor, task_id, message=None):
        """M55: commit what the worktree holds; a sync whose conflicts were resolved by
        hand is concluded by it, and the task goes back to review."""
        task = self.actions.task(actor, task_id)
        with self.lock(task_id):
            workspace = self.present(task)
            if workspace["stage"] in ("verifying", "merging"):
                raise RoostError(BUSY, f"task #{task_id} is {workspace['stage']}: commit when that is over")
            place = self.checkout(task)
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
        with self.lock(task_id):
            workspace = self.workspace(task, "conflict")
            aborted = git.abort_sync(self.checkout(task)) if os.path.isdir(workspace.get("path") or "") else False
            note = "the sync was given up" if aborted else "no sync was in progress"
            self.stages.move(task, "review", note=note, actor=actor)
        self.tell_holder(task, f"Task #{task['id']} ({task['title']}): the merge's conflicting sync was given "
                               "up; your branch is as it was before it.")
        return task, note

    def shelve(self, actor, task_id):
        """M59: remove a clean worktree, keep the branch; the claim is given back."""
        task = self.actions.task(actor, task_id)
        with self.lock(task_id):
            workspace = self.workspace(task, "working", "review", "failed", "conflict")
            repo = self.repository(task)
            if os.path.isdir(workspace["path"]) or git.find_worktree(repo, workspace["path"]):
                git.remove_worktree(repo, workspace["path"])     # refused (dirty) when work would be lost
            self.preparations.forget_hold(task)
            self.actions.give_back(task, "shelved", actor=actor)
            self.stages.move(task, "shelved", note=f"branch {workspace['branch']} kept", actor=actor)
        return task, f"the worktree was removed; branch {workspace['branch']} is kept"

    def diff(self, actor, task_id):
        """The branch against base, as a person reviews it."""
        task = self.actions.task(actor, task_id)
        workspace = self.workspace(task)
        repo = self.repository(task)
        if git.ref_sha(repo, workspace["branch"]) is None:
            raise bad_request(f"task #{task_id}'s branch {workspace['branch']} is gone")
        found = git.diff(repo, workspace["baseRef"], workspace["branch"])
        return task, {"text": found.text, "truncated": found.truncated, "base": found.base, "tip": found.tip,
                      "branch": workspace["branch"], "baseRef": workspace["baseRef"]}

    def under_roost(self, path):
        return places.is_ours(self.home, path)
