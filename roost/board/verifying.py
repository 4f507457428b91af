"""The repository's own check of a task (M56): `verify` after the holder's done, `setup`
before a first start, `approve`, `verify` again and `pass`.

Each runs as a roost job in the task's worktree (`verify #7`, `setup #7`: shell jobs a
person can peek at and whose output log stays until cleanup), at most two verifies per
repository at once, the others waiting in turn. A verify that exits 0 sends the task to
review; any other end sends it back to working, the end of its output told to the holder,
or to `failed` once it failed `maxRounds` times in a row. A setup that exits 0 starts the
session its start asked for.

A job's end is heard from the registry (its row ends); the task it checks is in its
record (`boardCheck`) and in the workspace (`verify.job`), so a daemon that restarts
while one runs follows it again (resume).
"""

import collections
import logging
import re
from dataclasses import dataclass

import gevent
from gevent.event import AsyncResult

from roost import git
from roost.board import task_git
from roost.board.approvals import Approvals, ProjectError, check_hash, read_project
from roost.clock import now_ms
from roost.errors import RoostError, bad_request
from roost.jobs.record import END_STATES
from roost.term.output_log import read_tail

log = logging.getLogger(__name__)

PER_REPOSITORY = 2
TAIL_BYTES = 16384
TAIL_LINES = 30
TAIL_CHARS = 2000
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")


@dataclass(frozen=True)
class Plan:
    """Whether a command may run now (`ready`), and what it is; `why` says why not."""

    ready: bool
    why: str = ""
    argv: list = None
    max_rounds: int = 0
    hash: str = ""


class Checks:
    def __init__(self, home, board, actions, stages, locks, registry, launcher):
        self.board = board
        self.actions = actions
        self.stages = stages
        self.locks = locks
        self.registry = registry
        self.launcher = launcher            # verify and setup run as roost jobs
        self.on_setup_passed = []           # fn(task, launch): the session's start (Preparations)
        self.approvals = Approvals(home)
        self.running = {}                                   # job id -> (task id, kind)
        self.slots = collections.defaultdict(set)           # repository -> task ids verifying
        self.queue = collections.defaultdict(collections.deque)
        self.waiters = {}                                   # task id -> AsyncResult(stage)

    # -- what may run -------------------------------------------------------------------

    def project(self, task, base=None):
        repo = task_git.repository(task)
        base = base or task["workspace"]["baseRef"]
        return repo, read_project(repo, base)

    def _plan(self, task, kind, base=None):
        try:
            repo, project = self.project(task, base)
        except ProjectError as error:
            return Plan(False, str(error))
        if project is None or project.argv(kind) is None:
            return None
        if not self.approvals.approved(repo.root, project):
            return Plan(False, f"the repository's {kind} command waits for a person's approval "
                               f"(`roost task approve {task['id']}`)")
        return Plan(True, argv=project.argv(kind), max_rounds=project.max_rounds, hash=project.hash)

    def verify_plan(self, task):
        return self._plan(task, "verify") or Plan(False)

    def setup_plan(self, task, hold):
        return self._plan(task, "setup", hold["baseRef"])

    def approve(self, actor, task_id, dry=False, wanted_hash=None):
        """M56: (task, note, hash): the commands shown, or approved for the repository."""
        task = self.actions.task(actor, task_id)
        base = (task.get("workspace") or task.get("prepared") or {}).get("baseRef")
        repo = task_git.repository(task)
        if base is None:
            base = git.checked_out_branch(repo)
        try:
            project = read_project(repo, base)
        except ProjectError as error:
            raise bad_request(str(error)) from None
        if project is None or not project.shown():
            raise bad_request(f"{repo.root} has no commands to approve (.roost/project.json on {base} names none)")
        shown = "\n".join(project.shown())
        if dry:
            state = "approved already" if self.approvals.approved(repo.root, project) else "not approved"
            return task, f"{repo.root} ({base}), {state}:\n{shown}", project.hash
        check_hash(project, wanted_hash)
        self.approvals.approve(repo.root, project, actor.by["who"])
        self.actions.changed(actor, task, "approve", f": {project.hash[:12]}")
        return task, f"approved for {repo.root}:\n{shown}", project.hash

    # -- running ----------------------------------------------------------------------------

    def run_verify(self, task, plan):
        """Start the task's verify, or queue it behind the two running in its repository.
        Call with the task's lock held and its stage `verifying`."""
        verify = task["workspace"].setdefault("verify", {})
        verify.update(round=verify.get("round", 0) + 1, maxRounds=plan.max_rounds, hash=plan.hash, job=None,
                      exit=None, queuedAt=now_ms())
        slots = self.slots[task["project"]]
        if len(slots) >= PER_REPOSITORY and task["id"] not in slots:
            if task["id"] not in self.queue[task["project"]]:
                self.queue[task["project"]].append(task["id"])
            task["workspace"]["note"] = f"waiting: {PER_REPOSITORY} verifies run in this repository"
            self.board.save()
            return
        slots.add(task["id"])
        self._launch(task, "verify", plan.argv)

    def run_setup(self, task, plan):
        task["workspace"]["setup"] = {"job": None, "exit": None}
        self._launch(task, "setup", plan.argv)

    def _launch(self, task, kind, argv):
        workspace = task["workspace"]
        args = {"kind": "shell", "cwd": workspace["path"], "command": argv, "env": {}, "name": f"{kind} #{task['id']}",
                "sessionFile": "", "origin": "bg"}
        record = workspace.setdefault(kind, {})
        try:
            repo = task_git.repository(task)
            record["tip"] = git.ref_sha(repo, workspace["branch"])
            if kind == "verify":
                self._check_runs_on_tip(task, record["tip"])
            job = self.launcher.launch(args, extra={"task": f"#{task['id']} {kind}",
                                                          "boardCheck": {"task": task["id"], "kind": kind}})
        except RoostError as error:
            self.slots[task["project"]].discard(task["id"])
            self._ended_without_job(task, kind, f"the {kind} command could not start: {error.text}")
            return
        self.running[job["id"]] = (task["id"], kind)
        record.update(job=job, startedAt=now_ms())
        self.board.save()

    def _check_runs_on_tip(self, task, tip):
        """A verify runs on the branch's tip: its worktree at that commit, with nothing
        beside it (refused otherwise, as a failed round)."""
        place = task_git.checkout(task)
        head = git.worktree_head(place)[1]
        if head != tip:
            raise bad_request(f"its worktree is at {str(head)[:12]}, not at branch {task['workspace']['branch']}'s "
                              f"tip {str(tip)[:12]}")
        changes = git.uncommitted_changes(place)
        if changes:
            raise bad_request("its worktree has uncommitted changes (" + ", ".join(p for _s, p in changes[:5]) + ")")

    def waiter(self, task_id):
        """An AsyncResult set to the stage the task's next verify ends in (the train's)."""
        self.waiters[task_id] = AsyncResult()
        return self.waiters[task_id]

    # -- their ends ---------------------------------------------------------------------------

    def row_changed(self, row, before):
        if row["id"] in self.running and row["state"] in END_STATES and (before or {}).get("state") != row["state"]:
            job = self.registry.get(row["id"])
            if job is not None and not job.run.active:
                gevent.spawn(self._ended, row["id"])

    def removed(self, row):
        if row["id"] in self.running:
            gevent.spawn(self._ended, row["id"], removed=True)

    def _ended(self, job_id, removed=False):
        held = self.running.pop(job_id, None)
        if held is None:
            return
        task_id, kind = held
        task = self.board.get(task_id)
        try:
            if task is not None:
                with self.locks.lock(task_id):
                    self._apply_end(task, kind, job_id, removed)
        finally:
            if kind == "verify":
                self._free_slot(task, task_id)

    def _apply_end(self, task, kind, job_id, removed):
        workspace = task.get("workspace") or {}
        record = workspace.get(kind) or {}
        if (record.get("job") or {}).get("id") != job_id:
            return                  # an earlier round's job
        job = self.registry.get(job_id)
        code = None if job is None else (job.record.get("exit") or {}).get("code")
        tail = "" if job is None else tail_of(self.registry.job_dir(job))
        how = "its job was removed" if removed else describe(job, code)
        record.update(exit=code, endedAt=now_ms(), tail=tail[-TAIL_CHARS:])
        if kind == "setup":
            self._setup_ended(task, code, how)
        else:
            self._verify_ended(task, code, how, tail)

    def _verify_ended(self, task, code, how, tail):
        workspace = task["workspace"]
        verify = workspace["verify"]
        if workspace.get("stage") != "verifying":
            self._tell_waiter(task)
            return
        moved = self._moved_since_launch(task) if code == 0 else None
        if moved:
            self.stages.move(task, "working", note=moved)
            self.actions.tell_holder(task, f"Task #{task['id']} ({task['title']}): {moved}")
        elif code == 0:
            verify.update(failures=0, passedTip=verify.get("tip"))
            self.stages.move(task, "review", note="verified", verifiedTip=verify.get("tip"))
        else:
            verify["failures"] = verify.get("failures", 0) + 1
            if verify["failures"] >= verify.get("maxRounds", 1):
                self.stages.move(task, "failed", note=f"verify failed {verify['failures']} times in a row ({how})")
            else:
                self.stages.move(task, "working", note=f"verify failed ({how}), round {verify['round']}")
            self.actions.tell_holder(task, f"Task #{task['id']} ({task['title']}): the repository's verify failed "
                                     f"({how}).\nThe end of its output:\n{tail or '(none)'}\n\n"
                                     + ("It failed too often: a person decides now."
                                        if workspace["stage"] == "failed" else
                                        f"Fix it, commit, and `roost task done {task['id']}` again."))
        self._tell_waiter(task)

    def _moved_since_launch(self, task):
        """Why a passed verify does not count (the branch is not at the commit it ran
        on any more), or None."""
        workspace = task["workspace"]
        ran_on = workspace["verify"].get("tip")
        try:
            now = git.ref_sha(task_git.repository(task), workspace["branch"])
        except RoostError as error:
            return f"the verify passed, but its branch cannot be read: {error.text}"
        if ran_on and now == ran_on:
            return None
        return (f"the verify passed on {str(ran_on)[:12]}, but branch {workspace['branch']} moved to "
                f"{str(now)[:12]} while it ran: `roost task done {task['id']}` again")

    def _tell_waiter(self, task):
        waiter = self.waiters.pop(task["id"], None)
        if waiter is not None:
            waiter.set(task["workspace"].get("stage"))

    def _setup_ended(self, task, code, how):
        workspace = task["workspace"]
        launch = workspace.pop("pendingLaunch", None)
        if code == 0 and launch is not None:
            workspace["setupDone"] = True
            try:
                for start in self.on_setup_passed:
                    start(task, launch)
                return
            except RoostError as error:
                how = f"the setup passed, but the session could not start: {error.text}"
        self.stages.move(task, "working", note=f"setup failed ({how}): prepare and start it again"
                           if code != 0 else how)
        self.actions.changed(None, task, "setup", f": {how}")

    def _ended_without_job(self, task, kind, why):
        if kind == "setup":
            self.stages.move(task, "working", note=why)
            task["workspace"].pop("pendingLaunch", None)
            return
        self._verify_ended(task, None, why, "")

    def _free_slot(self, task, task_id):
        project = (task or {}).get("project")
        if project is None:
            return
        self.slots[project].discard(task_id)
        queue = self.queue[project]
        while queue and len(self.slots[project]) < PER_REPOSITORY:
            waiting = self.board.get(queue.popleft())
            if waiting is None or (waiting.get("workspace") or {}).get("stage") != "verifying":
                continue
            with self.locks.lock(waiting["id"]):
                plan = self.verify_plan(waiting)
                if plan.ready:
                    waiting["workspace"]["verify"]["round"] -= 1        # the same round, started now
                    waiting["workspace"]["note"] = None
                    self.run_verify(waiting, plan)
                else:
                    self._verify_ended(waiting, None, plan.why or "no verify command any more", "")

    # -- a daemon's start --------------------------------------------------------------------

    def resume(self, task):
        """Follow again the verify or setup a daemon that stopped left running, or start
        again one it had queued."""
        workspace = task["workspace"]
        for kind in ("verify", "setup"):
            job_info = (workspace.get(kind) or {}).get("job")
            wanted = (kind == "verify" and workspace.get("stage") == "verifying") or \
                     (kind == "setup" and workspace.get("pendingLaunch") is not None)
            if not wanted:
                continue
            job = self.registry.get((job_info or {}).get("id") or "")
            if job is not None:
                self.running[job.id] = (task["id"], kind)
                if kind == "verify":
                    self.slots[task["project"]].add(task["id"])
                if not job.run.active:
                    gevent.spawn(self._ended, job.id)
            elif kind == "verify":
                plan = self.verify_plan(task)
                if plan.ready:
                    workspace["verify"]["round"] = max(0, workspace["verify"].get("round", 1) - 1)
                    self.run_verify(task, plan)
                else:
                    self._verify_ended(task, None, plan.why or "no verify command any more", "")
            else:
                self._ended_without_job(task, kind, "the setup's job is gone: prepare and start it again")

    def verify_again(self, actor, task_id):
        """M56: run the verify again, from review or failed."""
        task = self.actions.task(actor, task_id)
        with self.locks.lock(task_id):
            task_git.workspace(task, "review", "failed")
            task_git.present(task)
            task_git.checkout(task)           # a tampered worktree fails here, before a job runs in it
            plan = self.verify_plan(task)
            if not plan.ready:
                raise bad_request(plan.why or f"task #{task_id}'s repository names no verify command")
            self.stages.move(task, "verifying", note=None, actor=actor)
            self.run_verify(task, plan)
        return task

    def accept(self, actor, task_id):
        """M56: `pass`: a person accepts a failure; the task goes to review."""
        task = self.actions.task(actor, task_id)
        with self.locks.lock(task_id):
            task_git.workspace(task, "failed")
            # the person accepts the commit the verify failed on
            self.stages.move(task, "review", note=f"passed by the {actor.kind} after its verify failed",
                               actor=actor, verifiedTip=(task["workspace"].get("verify") or {}).get("tip"))
        return task


def describe(job, code):
    if job is None:
        return "its job is gone"
    if code is not None:
        return f"exit {code}"
    signal = (job.record.get("exit") or {}).get("signal")
    if signal:
        return f"killed by signal {signal}"
    return f"it ended {job.state}"


def tail_of(job_dir):
    """The end of a job's output, as text: escapes and carriage returns gone."""
    text = read_tail(job_dir, TAIL_BYTES).decode("utf-8", "replace")
    text = _ESCAPES.sub("", text).replace("\r\n", "\n")
    lines = [line.rsplit("\r", 1)[-1].rstrip() for line in text.split("\n")]
    lines = [line for line in lines if line.strip()]
    return "\n".join(lines[-TAIL_LINES:])[-TAIL_CHARS:]
