"""Making a task's worktree and starting a session in it (M55, M65): `prepare` and `start`.

`prepare` makes the worktree (branch `roost/t<id>-<slug>` from the branch checked out in
the main checkout, under roost's own directory), or makes a shelved task's again from its
branch, or finds the one there; the task holds it (`task.prepared`) for five minutes
(roost.json `prepareHoldMs`), then what it made is removed unless a start came. What a
prepare is about to make is saved before git makes it (`pending`), so a daemon killed
half-way leaves a record the next one finishes undoing (upkeep.reconcile).

`start` takes a launch whose cwd is inside the prepared worktree: anything else is
refused, and what was prepared for it is removed. The session is a roost job with its
row's `task` set; the task is claimed for it and its stage is `working`. A first start
runs the repository's approved `setup` first (verifying.py), and the session follows.
"""

import logging
import os
import secrets

import gevent

from roost import git, store
from roost.board import places, queued_starts, task_git
from roost.board.review import Reviews
from roost.errors import BLOCKED, BUSY, CONFLICT, RoostError, bad_request
from roost.events.bus import one_line
from roost.jobs import limits

log = logging.getLogger(__name__)

HOLD_MS = 5 * 60 * 1000
PROMPT_COMMENTS = 50
# A start that waited for a usage limit's reset goes this long after it: the provider's
# clock and ours may differ by a few seconds, and a start refused again costs a turn.
AFTER_RESET_S = 5.0


def _reached(step):
    """A prepare passed `step`. Does nothing: the kill tests replace it to end the
    daemon exactly there."""


class Preparations:
    def __init__(self, home, board, actions, stages, locks, launcher, config, clock, checks, admission):
        self.home = home
        self.board = board
        self.actions = actions
        self.stages = stages
        self.locks = locks
        self.launcher = launcher
        self.config = config
        self.clock = clock          # roost.clock: when a hold ends, when a limit's reset comes
        self.checks = checks        # a start's setup runs as a check
        self.admission = admission  # roost.spend.admission: budgets, plan windows, maxLive (issue 29)
        self.timers = {}            # task id -> the timer that ends its hold
        self.reset_timers = {}      # task id -> the timer that starts its agent after a limit's reset

    # -- prepare ------------------------------------------------------------------------

    def prepare(self, actor, task_id):
        """The task's worktree, made or found, held for it: (task, {path, branch, baseRef,
        baseSha, sourceDirty?})."""
        task = self.actions.task(actor, task_id)
        if task["state"] in ("done", "dropped"):
            raise bad_request(f"task #{task_id} is {task['state']}")
        workspace = task.get("workspace")
        stage = (workspace or {}).get("stage")
        if stage in ("verifying", "merging"):
            raise RoostError(BUSY, f"task #{task_id} is {stage}: its worktree is in use")
        holder = self.actions.holder(task)
        if holder is not None:
            raise RoostError(CONFLICT, f"task #{task_id} is held by {holder['name']} ({holder['id']}): "
                             "a start would take it from a live session")
        if not stage and self.board.blocked(task):
            raise RoostError(BLOCKED, f"task #{task_id} waits on " + ", ".join(
                f"#{other}" for other in self.board.blocked(task)))
        repo = task_git.repository(task)
        with self.locks.lock(task_id):
            hold = task.get("prepared")
            if hold and not hold.get("pending") and os.path.isdir(hold["path"]):
                hold["until"] = self.clock.now_ms() + self.hold_ms()
                self.board.save()
            elif stage and stage != "shelved" and os.path.isdir(workspace.get("path") or ""):
                hold = self._hold(workspace, made=False, fresh=False)     # one there, as it is
                task["prepared"] = hold
                self.board.save()
            elif stage:
                hold = self._remake(task, repo, workspace)
            else:
                hold = self._make(task, repo)
            self._arm(task_id, hold)
        self.actions.changed(actor, task, "prepare", f": worktree at {hold['path']}")
        answer = {key: hold[key] for key in ("path", "branch", "baseRef", "baseSha")}
        if hold.get("sourceDirty"):
            answer["sourceDirty"] = True
        return task, answer

    def hold_ms(self):
        return self.config.positive("prepareHoldMs", HOLD_MS)

    def _hold(self, source, made, fresh, **extra):
        return dict({"path": source["path"], "branch": source["branch"], "baseRef": source["baseRef"],
                     "baseSha": source["baseSha"], "made": made, "fresh": fresh, "at": self.clock.now_ms(),
                     "until": self.clock.now_ms() + self.hold_ms(), "token": secrets.token_hex(4)}, **extra)

    def _make(self, task, repo):
        """A new branch from the main checkout's branch, in a new worktree."""
        base = git.checked_out_branch(repo)
        if base is None:
            raise bad_request(f"{repo.root} has no branch checked out (its HEAD is detached): no base to start from")
        base_sha = git.require_sha(repo, base)
        branch = git.task_branch(repo, task["id"], task["title"])
        path = places.new_worktree_path(self.home, repo.root, task["id"])
        hold = self._hold({"path": path, "branch": branch, "baseRef": base, "baseSha": base_sha},
                          made=True, fresh=True, pending=True)
        task["prepared"] = hold
        self.board.save()           # before git makes anything: a kill leaves a record of it
        _reached("prepare_recorded")
        try:
            made = git.add_worktree(repo, path, branch, base)
        except BaseException:
            task.pop("prepared", None)
            self.board.save()
            raise
        _reached("prepare_added")
        # sourceDirty: changes to tracked files of the main checkout, which the worktree
        # does not have. Asked after the checkout, not beside it: both walk the disk, and
        # together they took longer than one after the other (bench/board.py).
        try:
            dirty = bool(git.uncommitted_changes(repo.root, untracked=False))
        except RoostError as error:
            log.info("the status of %s failed: %s", repo.root, error.text)
            dirty = False
        hold.update(path=made.path, baseSha=made.head, sourceDirty=dirty)
        hold.pop("pending")
        self.board.save()
        return hold

    def _remake(self, task, repo, workspace):
        """A shelved task's worktree again, from its branch (or a worktree removed by
        hand): at its old path when that is free."""
        path = workspace.get("path")
        if not path or os.path.lexists(path) or not places.is_ours(self.home, path):
            path = places.new_worktree_path(self.home, repo.root, task["id"])
        hold = self._hold(dict(workspace, path=path), made=True, fresh=False, pending=True)
        task["prepared"] = hold
        self.board.save()
        _reached("prepare_recorded")
        if git.find_worktree(repo, path) is not None:
            git.prune_worktrees(repo)
        try:
            made = git.add_worktree(repo, path, workspace["branch"])
        except BaseException:
            task.pop("prepared", None)
            self.board.save()
            raise
        _reached("prepare_added")
        hold["path"] = made.path
        hold.pop("pending")
        self.board.save()
        return hold

    # -- the hold's end -----------------------------------------------------------------

    def _arm(self, task_id, hold):
        timer = self.timers.pop(task_id, None)
        if timer is not None:
            timer.kill(block=False)
        self.timers[task_id] = self.clock.call_at(hold["until"], self._expire, task_id, hold["token"])

    def rearm(self, task):
        self._arm(task["id"], task["prepared"])

    def _expire(self, task_id, token):
        self.timers.pop(task_id, None)
        task = self.board.get(task_id)
        if task is None or (task.get("prepared") or {}).get("token") != token:
            return
        with self.locks.lock(task_id):
            if (task.get("prepared") or {}).get("token") == token:
                self.undo(task, "not started within the hold")

    def forget_hold(self, task):
        """Drop the task's hold, whatever it made staying (a start took it, a shelve)."""
        task.pop("prepared", None)
        timer = self.timers.pop(task["id"], None)
        if timer is not None and timer is not gevent.getcurrent():
            timer.kill(block=False)

    def undo(self, task, why):
        """Remove what the task's hold made (a worktree no start came for), never work:
        a worktree with changes is left (cleanup lists it) and a branch with commits
        stays. Saved, and told to the feed."""
        hold = task.get("prepared")
        if not hold:
            return ""
        note = ""
        if hold.get("made"):
            note = self._remove_made(task, hold)
        self.forget_hold(task)      # only now: a kill meanwhile leaves the record for the next start
        self.board.save()
        self.actions.changed(None, task, "prepare", f": the worktree prepared was removed ({why})"
                                        + (f"; {note}" if note else ""))
        return note

    def _remove_made(self, task, hold):
        try:
            repo = task_git.repository(task)
        except RoostError as error:
            return error.text
        pending = bool(hold.get("pending"))
        path = hold["path"]
        try:
            listed = git.find_worktree(repo, path)
            if listed is not None:
                # A pending one was cut short while git made it: nobody ever saw it, and
                # its branch (kept) holds every commit.
                git.remove_worktree(repo, path, force=pending)
            elif os.path.isdir(path) and pending and places.is_ours(self.home, path):
                store.remove_tree(path)     # made by a worktree add killed before git listed it
            git.prune_worktrees(repo)
            tip = git.ref_sha(repo, hold["branch"])
            if hold.get("fresh") and tip is not None and tip == hold["baseSha"]:
                git.delete_branch(repo, hold["branch"], base=hold["baseRef"])
        except RoostError as error:
            log.warning("task #%s: what its prepare made is left: %s", task["id"], error.text)
            return f"left as it is: {error.text}"
        return ""

    # -- start --------------------------------------------------------------------------

    def start(self, actor, task_id, launch):
        """M55: a session in the prepared worktree: (task, job {id, name} or None while
        the repository's setup runs first)."""
        task = self.actions.task(actor, task_id)
        if not isinstance(launch, dict):
            raise bad_request("launch must be an object (a DispatchArgs)")
        with self.locks.lock(task_id):
            hold = task.get("prepared")
            if not hold or hold.get("pending"):
                raise bad_request(f"task #{task_id} has no worktree prepared for a start: `prepare` it first")
            cwd = launch.get("cwd")
            if not isinstance(cwd, str) or not os.path.isabs(cwd) or not places.inside(cwd, hold["path"]):
                self.undo(task, "a start outside it was refused")
                raise bad_request(f"the launch's cwd {cwd!r} is not inside task #{task_id}'s worktree "
                                  f"{hold['path']}: the start is refused and the worktree prepared removed")
            stage = (task.get("workspace") or {}).get("stage")
            if stage in ("verifying", "merging", "merged"):
                raise RoostError(BUSY, f"task #{task_id} is {stage}: it cannot be started now")
            if self.actions.holder(task) is not None or task["state"] in ("done", "dropped"):
                self.undo(task, "the task is taken or finished")
                raise RoostError(CONFLICT, f"task #{task_id} is {task['state']}: it cannot be started")
            args = {key: value for key, value in launch.items() if key not in ("worktree", "requestId")}
            first = not (task.get("workspace") or {}).get("setupDone")
            setup = self.checks.setup_plan(task, hold) if first else None
            if setup is not None and setup.ready:
                self._take_hold(task, hold)
                self.stages.move(task, "working", note="setting up: the repository's setup runs first",
                                   actor=actor, pendingLaunch=args)
                self.checks.run_setup(task, setup)
                return task, None
            try:
                job = self.launch_session(task, args, hold=hold, actor=actor)
            except RoostError:
                if hold.get("made") and not task.get("workspace"):
                    self.undo(task, "its start was refused")
                raise
            if setup is not None and not setup.ready:
                task["workspace"]["note"] = setup.why
                self.board.save()
            return task, job

    # -- a start into a known usage limit (issue 19) -------------------------------------

    def _wait_for_reset(self, task, args, hold, actor, provider, reset):
        """An agent started now would meet the usage limit a parked job of its provider
        waits at: the worktree is the task's, its stage working, and the agent starts at
        the reset (kept on the workspace as `startAfterLimit`, so a daemon started
        meanwhile starts it too)."""
        workspace = self._take_hold(task, hold) if hold is not None else task["workspace"]
        workspace.pop("pendingLaunch", None)
        self.stages.move(
            task, "working", actor=actor, startAfterLimit={"at": reset, "launch": args},
            note=f"waits for the {provider} usage limit's reset at {limits.clock(reset)}: its agent starts then")
        self._arm_reset(task["id"], reset)

    def _wait_for_slot(self, task, args, hold, actor, verdict):
        """issue 29: a plan window used past admitBelowPercent waits for its reset, as a
        known limit does; past maxLive the start is queued (`startQueued`, tried again in
        order when a session of its provider ends or parks)."""
        if verdict.kind == "wait":
            workspace = self._take_hold(task, hold) if hold is not None else task["workspace"]
            workspace.pop("pendingLaunch", None)
            self.stages.move(task, "working", actor=actor,
                             startAfterLimit={"at": verdict.resets_at, "launch": args},
                             note=f"waits: {verdict.why}: its agent starts then")
            self._arm_reset(task["id"], verdict.resets_at)
            return
        workspace = self._take_hold(task, hold) if hold is not None else task["workspace"]
        workspace.pop("pendingLaunch", None)
        self.stages.move(task, "working", actor=actor, startQueued={"at": self.clock.now_ms(), "launch": args},
                         note=f"{verdict.why}: its agent starts when one ends")

    def start_queued(self, provider=None):
        """The starts maxLive queued, tried again in order (roost.board.queued_starts)."""
        queued_starts.start_queued(self)

    def _arm_reset(self, task_id, reset):
        timer = self.reset_timers.pop(task_id, None)
        if timer is not None:
            timer.kill(block=False)
        self.reset_timers[task_id] = self.clock.call_at(reset + int(AFTER_RESET_S * 1000), self._start_after_reset,
                                                        task_id)

    def rearm_reset(self, task):
        """A daemon's start: a start that waited for a reset waits on (or goes now)."""
        waiting = (task.get("workspace") or {}).get("startAfterLimit")
        if isinstance(waiting, dict) and isinstance(waiting.get("at"), int):
            self._arm_reset(task["id"], waiting["at"])

    def _start_after_reset(self, task_id):
        self.reset_timers.pop(task_id, None)
        task = self.board.get(task_id)
        with self.locks.lock(task_id):
            workspace = (task or {}).get("workspace") or {}
            waiting = workspace.get("startAfterLimit")
            if not isinstance(waiting, dict) or workspace.get("stage") != "working" \
                    or self.actions.holder(task) is not None or task["state"] in ("done", "dropped"):
                return
            workspace.pop("startAfterLimit", None)
            try:
                self.launch_session(task, waiting["launch"])
            except RoostError as error:
                self.stages.move(task, "working", note=f"its agent could not start after the usage "
                                                                  f"limit's reset: {error.text}")

    def _take_hold(self, task, hold):
        """The hold becomes the task's workspace (a new one, or the one it had)."""
        workspace = task.get("workspace")
        if not workspace:
            workspace = {"path": hold["path"], "branch": hold["branch"], "baseRef": hold["baseRef"],
                         "baseSha": hold["baseSha"], "stage": None, "note": None, "comments": []}
            task["workspace"] = workspace
        workspace["path"] = hold["path"]
        self.forget_hold(task)
        return workspace

    def launch_session(self, task, args, hold=None, actor=None):
        """Start the session (a job with the task in its row), claim the task for it,
        stage working. The prompt of a profile's agent names the task and carries the
        review comments left for it."""
        args = dict(args)
        limit = limits.known_limit(self.launcher, args, self.clock.now_ms())
        if limit is not None:
            self._wait_for_reset(task, args, hold, actor, *limit)
            return None
        verdict = self.admission.check(args, key=f"task:{task['id']}", task=task["id"])
        if verdict is not None and verdict.kind == "refuse":
            raise RoostError(BUSY, verdict.why)             # a budget it would break (issue 29)
        if verdict is not None:
            self._wait_for_slot(task, args, hold, actor, verdict)
            return None
        workspace = task.get("workspace") or {}
        is_agent = bool(args.get("profile") or args.get("protocol"))
        given = args.get("task") or (args.get("term") or {}).get("typeTask")
        if is_agent and not given:
            args["task"] = self.prompt(task, hold or workspace)
        # taskId: whose spend it is (issue 29), whatever its row's text says
        job = self.launcher.launch(args, extra={"task": one_line(f"#{task['id']} {task['title']}", 200),
                                                "taskId": task["id"]})
        workspace = self._take_hold(task, hold) if hold is not None else task["workspace"]
        if is_agent and not given:
            workspace["comments"] = []      # they went with the prompt
        workspace.pop("pendingLaunch", None)
        self.actions.claim_for(task, {"id": job["id"], "name": job["name"]}, actor=actor)
        self.stages.move(task, "working", note=None, actor=actor)
        return job

    def prompt(self, task, workspace):
        lines = [f"Task #{task['id']} on roost's board: {task['title']}"]
        if task.get("detail"):
            lines += ["", task["detail"]]
        lines += ["", f"You work in your own git worktree ({workspace['path']}) on branch {workspace['branch']}, "
                      f"from {workspace['baseRef']}. Commit your work there; when it is finished run "
                      f"`roost task done {task['id']}` (the worktree must be clean)."]
        if workspace.get("note"):
            lines += ["", f"Note: {workspace['note']}"]
        comments = (task.get("workspace") or {}).get("comments") or []
        if comments:
            lines += ["", "Review comments to address:"]
            lines += [Reviews.describe(comment) for comment in comments[:PROMPT_COMMENTS]]
        return "\n".join(lines)
