"""Keeping the board and the repositories in agreement (M59): at the daemon's start,
`cleanup`, and a branch merged by hand.

`reconcile` runs before the daemon serves. What a daemon killed half-way left is set
right: an interrupted land's checkout repaired (roost.git.recover_land); a prepare cut
short undone (its record says what it was about to make); a merge cut short finished
when base holds the branch, else its sync given up and the task back in review; a
merged task's worktree removed; a workspace whose worktree is gone shelved; holds re-armed
and verify and setup jobs followed again. Afterwards every worktree a task names is in
`git worktree list` and every one roost made for a live task is named by it.

`cleanup` removes (dry: lists, a line each) the worktrees under roost's own directory
that no task works in any more and that hold nothing base lacks: never one with
uncommitted changes or commits not merged into its base. It also removes the jobs of
old verify and setup runs (their logs) and the empty directories left.
"""

import collections
import logging
import os

from roost import git
from roost.board import places
from roost.board.stages import ACTIVE
from roost.clock import now_ms
from roost.errors import RoostError
from roost.git.errors import GitError

log = logging.getLogger(__name__)

HAND_MERGEABLE = ("working", "review", "failed", "conflict", "shelved")
IDLE_WAIT_S = 10.0      # a git that a killed daemon started may still be at work


class Upkeep:
    def __init__(self, home, board, actions, stages, locks, registry, checks, preparations, merges):
        """What it sets right at the daemon's start and in a cleanup: the holds
        (`preparations`), the verifies and setups under way (`checks`), the merges
        finished by hand or cut short (`merges`)."""
        self.home = home
        self.board = board
        self.actions = actions
        self.stages = stages
        self.locks = locks
        self.registry = registry
        self.checks = checks
        self.preparations = preparations
        self.merges = merges

    def _by_repository(self, wanted):
        groups = collections.defaultdict(list)
        for task in self.board.tasks:
            if task.get("project") and wanted(task):
                groups[task["project"]].append(task)
        return groups

    # -- the daemon's start -----------------------------------------------------------------

    def reconcile(self):
        groups = self._by_repository(lambda task: task.get("prepared") or task.get("workspace"))
        for project, tasks in groups.items():
            repo = git.repository_of(project)
            if repo is None:
                log.warning("the repository %s of %d tasks is gone", project, len(tasks))
                continue
            if not git.wait_until_idle(repo, timeout=IDLE_WAIT_S):
                log.warning("%s: an index lock stays after %g s (left by a crash?)", repo.root, IDLE_WAIT_S)
            try:
                repaired = git.recover_land(repo, lock_timeout=10)
                if repaired:
                    log.warning("%s: %s", repo.root, repaired)
            except RoostError as error:
                log.warning("%s: an interrupted land could not be set right: %s", repo.root, error.text)
            for task in tasks:
                try:
                    with self.locks.lock(task["id"]):
                        self._reconcile(task, repo)
                except RoostError as error:
                    log.warning("task #%s: its workspace could not be set right: %s", task["id"], error.text)
            self._prune_ours(repo)
        for task in self.board.tasks:
            if task.get("workspace") and task.get("project"):
                self.preparations.rearm_reset(task)
                try:
                    self.checks.resume(task)
                except RoostError as error:
                    log.warning("task #%s: its verify could not be followed: %s", task["id"], error.text)

    def _reconcile(self, task, repo):
        hold = task.get("prepared")
        if hold:
            if hold.get("pending") or hold.get("until", 0) <= now_ms():
                self.preparations.undo(task, "cut short by the daemon's stop" if hold.get("pending")
                                         else "not started within the hold")
            elif not os.path.isdir(hold["path"]):
                self.preparations.forget_hold(task)
                self.board.save()
            else:
                self.preparations.rearm(task)
        workspace = task.get("workspace") or {}
        stage = workspace.get("stage")
        if not stage:
            return
        if stage == "merging":
            self._resume_merge(task, repo)
            return
        listed = git.find_worktree(repo, workspace["path"]) if workspace.get("path") else None
        if stage == "merged" and listed is not None:
            self.merges.remove_merged(task)
        elif stage in ACTIVE and (listed is None or listed.prunable):
            if listed is not None:
                self._prune_ours(repo)
            holder = task.get("owner")
            self.stages.move(task, "shelved", note=f"its worktree was removed outside roost; "
                                                     f"branch {workspace['branch']} kept")
            if holder and task["state"] == "claimed":
                self.actions.give_back(task, "its worktree is gone")

    def _resume_merge(self, task, repo):
        workspace = task["workspace"]
        tip = git.ref_sha(repo, workspace["branch"])
        if tip is not None and git.ref_sha(repo, workspace["baseRef"]) is not None \
                and git.is_merged(repo, workspace["branch"], workspace["baseRef"]):
            self.merges.finish_merged(task, how=f"merged into {workspace['baseRef']} (the daemon stopped "
                                                  "while it landed)")
            self.merges.remove_merged(task)       # now: the board and git agree before it serves
            return
        note = "the merge was cut short by the daemon's stop: merge it again"
        if os.path.isdir(workspace["path"]):
            try:
                place = git.checkout_of(repo, workspace["path"])
            except GitError as error:
                if error.reason != "tampered":
                    raise
                self.locks.fail_tampered(task, error)
                return
            if git.worktree_head(place)[2]:
                git.abort_sync(place)
                note += " (its sync was given up)"
        self.stages.move(task, "review", note=note)

    def _prune_ours(self, repo):
        """`git worktree prune` when every worktree git would prune is one of roost's:
        a person's own stale entries are theirs to prune."""
        stale = [tree for tree in git.list_worktrees(repo) if tree.prunable]
        if stale and all(places.is_ours(self.home, tree.path) for tree in stale):
            git.prune_worktrees(repo)

    # -- cleanup ----------------------------------------------------------------------------

    def cleanup(self, actor, dry=False):
        """(note: a line per thing removed, or that would be)."""
        lines = []
        in_use, by_path = {}, {}
        for task in self.board.tasks:
            workspace = task.get("workspace") or {}
            for path in ((task.get("prepared") or {}).get("path"), workspace.get("path")):
                if path:
                    by_path[os.path.realpath(path)] = task
            if task.get("prepared"):
                in_use[os.path.realpath(task["prepared"]["path"])] = task
            if workspace.get("stage") in ACTIVE and task["state"] != "dropped" and workspace.get("path"):
                in_use[os.path.realpath(workspace["path"])] = task
        for repo in self._repositories():
            lines += self._clean_repository(repo, in_use, by_path, dry)
        lines += self._clean_check_jobs(dry)
        if not dry:
            self._remove_empty_directories()
            if lines:
                log.info("cleanup by the %s: %s", actor.kind, "; ".join(lines))
        return "\n".join(lines) or "nothing to clean up"

    def _repositories(self):
        found = {}
        for project in self._by_repository(lambda task: task.get("workspace") or task.get("prepared")):
            repo = git.repository_of(project)
            if repo is not None:
                found[repo.root] = repo
        for key, path in places.known_directories(self.home):
            repo = git.repository_of(path) if os.path.exists(os.path.join(path, ".git")) else None
            # Found through the worktree's own .git, so believed only when it is the
            # repository roost filed the directory under (its key is a hash of the root).
            if repo is not None and not repo.bare and places.repository_key(repo.root) == key:
                found.setdefault(repo.root, repo)
        return list(found.values())

    def _clean_repository(self, repo, in_use, by_path, dry):
        lines, prune = [], False
        for tree in git.list_worktrees(repo):
            real = os.path.realpath(tree.path)
            if tree.main or not places.is_ours(self.home, tree.path) or real in in_use:
                continue
            task = by_path.get(real)
            whose = f"task #{task['id']}, {_why_done(task)}" if task else "no task's"
            if tree.prunable:
                lines.append(f"prune {tree.path}: its directory is gone ({whose})")
                prune = True
                continue
            base = ((task or {}).get("workspace") or {}).get("baseRef") or git.checked_out_branch(repo)
            if tree.branch is None or base is None or tree.locked:
                continue        # a detached HEAD's commits, no base to judge by, or locked on purpose
            try:
                if git.uncommitted_changes(git.checkout_of(repo, tree.path)):
                    continue            # work in progress
                if not git.is_merged(repo, tree.branch, base):
                    continue            # commits base lacks
                lines.append(f"remove {tree.path} (branch {tree.branch}, {whose})")
                if not dry:
                    git.remove_worktree(repo, tree.path, base=base)
                    if tree.branch.startswith("roost/t"):
                        git.delete_branch(repo, tree.branch, base=base)
            except RoostError as error:
                log.info("cleanup left %s: %s", tree.path, error.text)
        if prune and not dry:
            git.prune_worktrees(repo)
        return lines

    def _clean_check_jobs(self, dry):
        """Ended verify and setup jobs no task looks at any more: their logs."""
        registry = self.registry
        lines = []
        for job in registry.all():
            check = job.record.get("boardCheck")
            if not isinstance(check, dict) or job.run.active:
                continue
            task = self.board.get(check.get("task"))
            workspace = (task or {}).get("workspace") or {}
            current = ((workspace.get(check.get("kind")) or {}).get("job") or {}).get("id")
            if task is not None and workspace.get("stage") != "merged" and task["state"] != "dropped" \
                    and current == job.id:
                continue
            lines.append(f"remove the {check.get('kind')} log of task #{check.get('task')} (job {job.id})")
            if not dry:
                registry.remove(job)
        return lines

    def _remove_empty_directories(self):
        """The empty directories left under roost's worktrees directory (a worktree's
        own, a repository's): os.rmdir removes only an empty one."""
        top = places.worktrees_dir(self.home)
        found = [path for _key, path in places.known_directories(self.home)]
        try:
            found += [os.path.join(top, key) for key in sorted(os.listdir(top))]
        except FileNotFoundError:
            return
        for directory in found:
            try:
                os.rmdir(directory)
            except OSError:
                pass

    # -- a branch merged by hand ------------------------------------------------------------

    def notice_merged(self):
        """Listing the board marks merged a task whose branch base holds (merged by hand,
        or on GitHub and pulled): one run of git per repository and base."""
        groups = self._by_repository(lambda task: task["state"] != "dropped" and
                                     (task.get("workspace") or {}).get("stage") in HAND_MERGEABLE)
        for project, tasks in groups.items():
            try:
                repo = git.repository_of(project)
                if repo is None:
                    continue
                by_base = collections.defaultdict(list)
                for task in tasks:
                    by_base[task["workspace"]["baseRef"]].append(task)
                for base, waiting in by_base.items():
                    if git.ref_sha(repo, base) is None:
                        continue
                    merged = git.merged_tips(repo, base, [task["workspace"]["branch"] for task in waiting])
                    for task in waiting:
                        tip = merged.get(task["workspace"]["branch"])
                        # A branch still at the commit it started from holds no work to merge.
                        if tip is not None and tip != task["workspace"].get("baseSha"):
                            with self.locks.lock(task["id"]):
                                if task["workspace"].get("stage") in HAND_MERGEABLE:
                                    self.merges.finish_merged(task, how=f"merged into {base} by hand")
            except RoostError as error:
                log.info("looking for branches merged by hand in %s: %s", project, error.text)


def _why_done(task):
    workspace = task.get("workspace") or {}
    if task["state"] == "dropped":
        return "dropped"
    return workspace.get("stage") or "not started"
