"""Landing a task on base, locally (M55), and the merge train (roost's own).

A merge syncs the branch with base in the task's worktree first (`git merge` of base:
a real conflict stops there, stage `conflict`, the worktree mid-merge for the holder or
a person to resolve, or `abort`), then lands it (roost.git.land: ff, no-ff, or update-ref
when base is checked out nowhere, under the repository's lock, base at its old commit or
the new one whatever is killed when). A land refused because base moved meanwhile is
synced and tried again. Once landed the task is `merged` (`state: done`), and its
worktree and branch, merged and clean, are removed.

Each step is saved before the next starts (stage `merging` with what base was), so a
daemon killed half-way is set right at its next start (`resume`): landed, it is merged;
not, the cut-short sync is given up and the task is back in review.

The train lands several tasks in review one at a time, in the order given, except that
those git predicts to conflict go last (train_order.py, said before it starts, checked
again against each new base): each is
synced with base as the ones before left it and, when its repository has an approved
verify and base moved under it, verified again before base moves. The first that
conflicts or fails stops the train there and goes back to its holder; the ones before
it stay landed.
"""

import logging

import gevent

from roost import git
from roost.board import task_git, train_order
from roost.clock import now_ms
from roost.errors import RoostError, bad_request
from roost.git.errors import GitError

log = logging.getLogger(__name__)

LAND_TRIES = 3
MODES = ("ff", "no-ff")
MAX_TRAIN = 50


def _reached(step):
    """A merge passed `step`. Does nothing: the kill tests replace it to end the daemon
    exactly there."""


def _follow_sync(workspace, result):
    """After roost's own sync of a verified branch, the tip that lands is the sync's
    merge of base into it: recorded. A sync that did not start from the verified tip
    (the branch moved in between) refuses the merge: why, in words."""
    if result.outcome != "merged":
        return None
    if result.before != workspace.get("verifiedTip"):
        return (f"not merged: branch {workspace['branch']} moved since it was verified and reviewed "
                f"({str(workspace.get('verifiedTip'))[:12]} -> {str(result.before)[:12]})")
    workspace["verifiedTip"] = result.head
    return None


def _raise_tampered(error):
    """A worktree refused as tampered is no refusal to merge but a failure of the task
    (TaskLocks.lock sends it to failed): it passes on."""
    if isinstance(error, GitError) and error.reason == "tampered":
        raise error


class Merges:
    def __init__(self, board, actions, stages, locks, checks):
        self.board = board
        self.actions = actions
        self.stages = stages
        self.locks = locks
        self.checks = checks        # a merge's verify runs as a check

    def merge(self, actor, task_id, mode="ff"):
        """(task, note): merged, a conflict, or refused, in words."""
        task = self.actions.task(actor, task_id)
        with self.locks.lock(task_id):
            self._check(task)
            unverified = task_git.unverified(task)
            if unverified:
                note = f"not merged: {unverified}"
                self.stages.move(task, "review", note=note, actor=actor)
                return task, note
            self._begin(task, actor, mode)
            # The land first: a branch that holds base already lands as it is, and one
            # that does not is refused before anything moves, then synced (_land).
            outcome, note = self._land(task, actor, mode, resync=True)
        if outcome == "conflict":
            self._tell_conflict(task)
        return task, note

    def _check(self, task):
        workspace = task_git.workspace(task, "review", "conflict")
        task_git.present(task)
        if task["state"] == "dropped":
            raise bad_request(f"task #{task['id']} is dropped")
        # a worktree whose .git was tampered with lands nothing, even what needs no sync
        place = task_git.checkout(task)
        if workspace["stage"] == "conflict" and git.worktree_head(place)[2]:
            raise bad_request(f"task #{task['id']}'s sync stopped on conflicts: resolve and commit them "
                              f"(`roost task commit {task['id']}`), or give it up (`roost task abort {task['id']}`)")

    def _begin(self, task, actor, mode):
        """Stage merging, saved with what base was, before anything changes."""
        old = git.require_sha(task_git.repository(task), task["workspace"]["baseRef"])
        self.stages.move(task, "merging", note=None, actor=actor, merge={"mode": mode, "at": now_ms(), "old": old})
        _reached("merge_recorded")

    def _sync(self, task, actor, mode):
        """Stage merging, then base merged into the branch: ("synced", result), or
        ("conflict" | "refused", note) with the stage set."""
        workspace = task["workspace"]
        repo = task_git.repository(task)
        self._begin(task, actor, mode)
        try:
            if git.is_merged(repo, workspace["baseRef"], workspace["branch"]):
                # The branch holds base already: nothing to sync, and the worktree's state
                # (the status of every file) does not matter to the land.
                workspace["merge"]["synced"] = "up_to_date"
                _reached("synced")
                return "synced", None
            result = git.sync_with_base(repo, task_git.checkout(task), workspace["baseRef"])
        except RoostError as error:
            _raise_tampered(error)
            return self._refused(task, f"syncing with base failed: {error.text}")
        refusal = _follow_sync(workspace, result)
        if refusal:
            return self._refused(task, refusal)
        self.board.save()         # the tip that lands now, before anything else can stop the merge
        _reached("synced")
        if result.outcome == "conflict":
            shown = ", ".join(result.conflicts[:10]) + (" ..." if len(result.conflicts) > 10 else "")
            note = f"syncing with {workspace['baseRef']} stopped on conflicts in {shown or 'some files'}"
            self.stages.move(task, "conflict", note=note, conflicts=result.conflicts[:200])
            return "conflict", note
        if result.outcome == "refused":
            return self._refused(task, f"not merged: {result.detail}")
        workspace["merge"]["synced"] = result.outcome      # saved with the land's outcome
        return "synced", result

    def _refused(self, task, note):
        self.stages.move(task, "review", note=note)
        return "refused", note

    def _land(self, task, actor, mode, resync):
        workspace = task["workspace"]
        repo = task_git.repository(task)
        for attempt in range(LAND_TRIES):
            try:
                landed = git.land(repo, workspace["branch"], workspace["baseRef"], mode=mode,
                                  message=f"Merge task #{task['id']}: {task['title']}",
                                  tip=workspace.get("verifiedTip"))
                break
            except GitError as error:
                if error.reason not in ("not_synced", "moved") or not resync or attempt + 1 == LAND_TRIES:
                    return self._refused(task, f"not merged: {error.text}")
            # the branch does not hold base (any more): bring it along, in its worktree
            try:
                result = git.sync_with_base(repo, task_git.checkout(task), workspace["baseRef"])
            except RoostError as error:
                _raise_tampered(error)
                return self._refused(task, f"syncing with base failed: {error.text}")
            workspace["merge"]["synced"] = result.outcome
            refusal = _follow_sync(workspace, result)
            if refusal:
                return self._refused(task, refusal)
            self.board.save()
            _reached("synced")
            if result.outcome == "conflict":
                note = f"syncing with {workspace['baseRef']} stopped on conflicts in {', '.join(result.conflicts[:10])}"
                self.stages.move(task, "conflict", note=note, conflicts=result.conflicts[:200])
                return "conflict", note
            if result.outcome == "refused":
                return self._refused(task, f"not merged: {result.detail}")
        _reached("landed")
        workspace["merge"].update(new=landed.new, outcome=landed.outcome, checkout=landed.checkout)
        return "merged", self.finish_merged(task, actor=actor)

    def finish_merged(self, task, actor=None, how=None):
        """Stage merged (`state: done`), then the worktree and the branch removed, right
        after the answer: removing a worktree writes as much as checking one out, and the
        merge is done once base moved (a daemon that stops first removes them at its next
        start)."""
        workspace = task["workspace"]
        merge = workspace.setdefault("merge", {})
        new = merge.get("new") or ""
        note = how or (f"merged into {workspace['baseRef']} at {new[:12]} ({merge.get('mode', 'ff')})"
                       if merge.get("outcome") != "up_to_date" else f"already in {workspace['baseRef']}")
        merge["at"] = now_ms()
        self.stages.move(task, "merged", note=note, actor=actor)
        _reached("merged_saved")
        gevent.spawn(self._remove_in_turn, task)
        return note

    def _remove_in_turn(self, task):
        with self.locks.lock(task["id"]):
            left = self.remove_merged(task)
            if left:
                task["workspace"]["note"] = f"{task['workspace'].get('note')}; {left}"
                self.board.save()

    def remove_merged(self, task):
        """A merged task's worktree and branch go: both hold nothing base does not. What
        is left (a change made since) stays, and the note says so."""
        workspace = task["workspace"]
        try:
            repo = task_git.repository(task)
            if git.find_worktree(repo, workspace["path"]) is not None:
                git.remove_worktree(repo, workspace["path"], base=workspace["baseRef"])
            if git.ref_sha(repo, workspace["branch"]) is not None:
                git.delete_branch(repo, workspace["branch"], base=workspace["baseRef"])
        except RoostError as error:
            log.info("task #%s: its merged worktree stays: %s", task["id"], error.text)
            return f"its worktree stays ({error.text}): cleanup removes it once it is clean"
        return ""

    def _tell_conflict(self, task):
        self.actions.tell_holder(task, f"Task #{task['id']} ({task['title']}): merging it stopped on "
                                          f"conflicts with {task['workspace']['baseRef']} "
                                          f"({task['workspace'].get('note')}). The merge is in progress in your "
                                          "worktree: resolve the conflicts, commit, and "
                                          f"`roost task done {task['id']}` again.")

    # -- the train --------------------------------------------------------------------------

    def train(self, actor, task_ids, mode="ff", dry=False):
        """Land `task_ids`, in review, one at a time, the predicted conflicts last; (tasks,
        note) with the order and why, then a line each. `dry`: the order only."""
        if not task_ids or len(task_ids) > MAX_TRAIN:
            raise bad_request(f"a train takes 1 to {MAX_TRAIN} tasks")
        if len(set(task_ids)) != len(task_ids):
            raise bad_request("a train names each task once")
        tasks = []
        for task_id in task_ids:
            task = self.actions.task(actor, task_id)
            task_git.workspace(task, "review")
            task_git.present(task)
            tasks.append(task)
        # issue 20: what git predicts to conflict goes last, and that is said first
        order = train_order.plan(tasks, task_git.repository)
        if dry:
            return order.tasks, "\n".join(order.lines)
        self.actions.changed(actor, order.tasks[0], "train", ": " + "; ".join(order.lines))
        lines = list(order.lines)
        queue = list(order.tasks)
        while queue:
            task = queue.pop(0)
            outcome, note = self._train_one(task, actor, mode)
            lines.append(f"#{task['id']}: {note}")
            if outcome != "merged":
                lines += [f"#{later['id']}: not merged: the train stopped at #{task['id']}" for later in queue]
                break
            queue, moved = train_order.recheck(queue, order.last, task_git.repository)
            lines += moved
        self.actions.changed(actor, order.tasks[0], "train", ": " + "; ".join(lines))
        return order.tasks, "\n".join(lines)

    def _train_one(self, task, actor, mode):
        with self.locks.lock(task["id"]):
            if (task.get("workspace") or {}).get("stage") != "review":
                return "refused", f"not merged: it is {task['workspace'].get('stage')}, not review"
            try:
                task_git.checkout(task)
            except GitError as error:
                if error.reason == "tampered":
                    self.locks.fail_tampered(task, error)
                return "refused", f"not merged: {error.text}"
            unverified = task_git.unverified(task)
            if unverified:
                return self._refused(task, f"not merged: {unverified}")
            outcome, detail = self._sync(task, actor, mode)
            if outcome == "conflict":
                self._tell_conflict(task)
            if outcome != "synced":
                return outcome, detail
            plan = self.checks.verify_plan(task)
            workspace = task["workspace"]
            tip = git.ref_sha(task_git.repository(task), workspace["branch"])
            verified = plan.ready and tip != (workspace.get("verify") or {}).get("passedTip")
            if verified:
                waiter = self.checks.waiter(task["id"])
                self.stages.move(task, "verifying", note="the train: verified again on the new base")
                self.checks.run_verify(task, plan)
        if verified:
            stage = waiter.get()
            if stage != "review":
                return "failed", f"not merged: its verify failed on the new base ({stage}); it is back with its holder"
        with self.locks.lock(task["id"]):
            if verified:
                self.stages.move(task, "merging", note=None)
            # Verified on this base: should base move meanwhile (someone's hand), the land
            # is refused rather than synced again without a verify.
            return self._land(task, actor, mode, resync=not verified)
