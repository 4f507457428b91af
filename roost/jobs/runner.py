"""Running jobs: start one through the keeper and give it its Terminal, stop it, start it
again. Its run's end is roost.jobs.run_end's; adopting the keeper's jobs when a daemon
starts, and ending them when it leaves, roost.jobs.adoption's.

A run moves starting -> running -> stopping -> ended through JobRegistry.move only
(roost.jobs.run); the screen's readings set a terminal agent's row while it runs.
"""

import logging
import os

import gevent

from roost.errors import BAD_REQUEST, BUSY, INTERNAL, RoostError
from roost.jobs import builtin_profiles, jail, launch, limits, processes, sessions
from roost.jobs.record import END_STATES, LIVE_STATES
from roost.jobs.run_end import MAX_QUICK_DEATHS, QUICK_DEATH_MS, RunEnds, recorded_exit
from roost.jobs.unread import UnreadWatch
from roost.jobs.witness import Witness
from roost.keeper.client import KeeperError, KeeperRefused
from roost.term.drafts import HELD_TEXT

log = logging.getLogger(__name__)

STOP_GRACE_MS = 3000        # SIGTERM to SIGKILL (roost.json "stopGraceMs")
END_WAIT_S = 10.0           # after the processes are gone, time for the exit to be told
BACKOFF_BASE_MS = 250       # the next start after a quick death waits this, doubled per death
KEEPER_LOST = "the keeper was lost; jobs started before keep running without it"


class JobRunner:
    def __init__(self, registry, keeper, config, socket_path, clock, roost_bin=None):
        self.registry = registry
        self.clock = clock              # roost.clock: a stop's grace, a quick death's backoff, when runs start
        self.roost_bin = roost_bin      # first on every job's PATH (roost.jobs.roost_on_path)
        self.keeper = keeper
        self.config = config
        self.socket_path = socket_path
        self.ends = RunEnds(registry, keeper)
        self.unread = UnreadWatch(registry, config)
        self.witness = Witness(keeper)  # the kernel's word on whether a job reads its terminal
        # Whether bwrap makes jails here, and each start's argv in one (roost.jobs.jail).
        self.jails = jail.Jails(registry.home, socket_path, keeper.path, roost_bin)
        self.pty_error = None           # why terminals cannot be had, for `status`
        self.on_started = []            # fn(job) once a run is recorded (its replies are typed)
        self.on_adopted = []            # fn(job) once a run a daemon before this one started is ours
        self.on_held = []               # fn(job, reading) when the kernel holds back a screen's word

    def stop_grace(self):
        """Seconds from SIGTERM to SIGKILL (roost.json "stopGraceMs")."""
        return (self.config.get("stopGraceMs") or STOP_GRACE_MS) / 1000.0

    # -- starting -------------------------------------------------------------
    def start(self, job, argv=None):
        """Spawn the job's program (its launch argv, or `argv`) and give it a Terminal.
        Raises RoostError (bad_request) with the reason when it cannot run; the job is
        then failed with that reason."""
        # `{bundle}/` arguments name this release's own files (roost.jobs.builtin_profiles).
        argv = builtin_profiles.expand(argv or job.launch["argv"])
        # `{jobDir}` and `{sessionId}`: the job's own directory and conversation.
        argv = sessions.fill(argv, self.registry.job_dir(job), job.launch)
        first = job.state is None
        self._retire(job)
        self.registry.move(job, "starting")
        try:
            started_at = self.clock.now_ms()
            pty, jailed = self._spawn(job, argv)
            pid = job.run.pid = pty.pid
            # The terminal reads from now on: its first output need not wait for the disk.
            self.attach_terminal(job, pty)
            # In the feed before anything the run does while its start is written.
            self._publish_start(job, argv, first)
            self.registry.move(job, "running", state="working", pid=pid, startedAt=started_at,
                               endedAt=None, status="busy", waitingFor=None, resetsAt=None, question=None,
                               choices=[], error=None, reaped=False, lastArgv=argv, unreadSince=None, **jailed)
        except BaseException:
            if job.run.phase == "starting":
                self.registry.move(job, "ended")
            raise
        log.info("job %s started: pid %d, %s", job.id, pid, argv[0])
        early, job.run.early_exit = job.run.early_exit, None
        if early is not None:
            self.ends.exited(early)   # it ended before its start was recorded
        self.announce_started(job)
        return job

    def announce_started(self, job, adopted=False):
        """A run of the job is ours: started now, or (`adopted`) taken from the keeper
        after the daemon's restart, maybe with replies waiting on its book."""
        for hook in list(self.on_adopted if adopted else self.on_started):
            try:
                hook(job)
            except Exception:
                log.exception("a start hook failed")

    def _publish_start(self, job, argv, first):
        parent = self.registry.get(job.record.get("parentSession") or "")
        who = {"who": parent.name, "who_id": parent.id} if parent is not None and first else {}
        program = os.path.basename(argv[0])
        text = f"started: {program} in {job.record.get('cwd')}" if first else f"started again: {program}"
        self.registry.bus.publish("start" if first else "restart", text, job.id, job.name, **who)

    def _spawn(self, job, argv):
        """(the keeper's Pty, the row's fields of the jail: sandboxed, ports)."""
        env = launch.job_environ(job, self.socket_path, self.registry.job_dir(job), self.roost_bin)
        cwd = job.record["cwd"]
        try:
            argv, env, jailed = self._jail(job, argv, env, cwd)
            spawned = self.keeper.spawn(job.id, argv, env, cwd,
                                        job.launch.get("rows") or 40, job.launch.get("cols") or 120)
        except KeeperError as error:
            log.info("job %s could not start: %s", job.id, error)
            if job.state in END_STATES and job.state != "stopped":
                self.registry.move(job, "ended", error=str(error))
            else:
                self.registry.move(job, "ended", state="failed", error=str(error), endedAt=self.clock.now_ms(), pid=None)
            # A program that cannot run is the caller's to fix; a keeper out of reach is ours.
            raise RoostError(BAD_REQUEST if isinstance(error, KeeperRefused) else INTERNAL, str(error))
        if self.pty_error == KEEPER_LOST:
            self.pty_error = None      # a new keeper serves
        return spawned, jailed

    def _jail(self, job, argv, env, cwd):
        """(argv, env, row fields) of a start: in a jail of its own unless it may not be
        (roost.jobs.jail.decide). Raises KeeperRefused when its program cannot run."""
        config = self.config.current()
        jailed, why = jail.decide(config, job.launch, self.jails)
        if not jailed:
            if why:
                log.info("job %s runs without a jail: %s", job.id, why)
            return argv, env, {"sandboxed": False, "ports": None}
        taken = {(other.record.get("ports") or [None])[0] for other in self.registry.all()
                 if other is not job and other.run.active and other.record.get("sandboxed")}
        try:
            wrapped, env, ports = self.jails.wrap(job.launch, argv, env, cwd, self.registry.job_dir(job), config,
                                                  taken)
        except jail.CannotRun as refused:
            raise KeeperRefused(str(refused))
        return wrapped, env, {"sandboxed": True, "ports": ports}

    def _retire(self, job):
        """Let go of a previous run's terminal that a grandchild still held open."""
        finisher, job.finisher = job.finisher, None
        if finisher is not None:
            finisher.kill(block=True)
        terminal, job.terminal = job.terminal, None
        if terminal is not None:
            terminal.close()
            self.keeper.release(job.id, job.run.pid)

    def attach_terminal(self, job, pty, judge_later=0.0):
        from roost.term.terminal import Terminal

        term = dict(job.launch.get("term") or {})
        term.pop("typeTask", None)     # roost.jobs.replies types the task, never the reader
        typed = bool(job.launch.get("taskInArgv") or job.record.get("typedOnce"))
        # Only an agent (a profile), or a command given a task to type, waits for a first task.
        takes_task = bool(job.launch.get("profile") or job.record.get("task"))
        terminal = Terminal(job.id, pty.master, self.registry.job_dir(job), term=term or None,
                            rows=job.launch.get("rows") or 40, cols=job.launch.get("cols") or 120,
                            typed=typed, carry=pty.carry, probe=self.witness.for_run(job.id, pty.pid, pty.master),
                            takes_task=takes_task, clock=self.clock)
        hooks = _TerminalHooks(self, job, terminal)
        terminal.on_change, terminal.on_eof, terminal.on_held = hooks.changed, hooks.drained, hooks.held
        if job.record.get("held"):
            self.registry.change(job, held=None, lasting=False)   # a draft of a terminal now gone
        job.terminal = terminal
        job.finisher = None
        terminal.start(judge_later)

    def _apply_reading(self, job, terminal, reading):
        """The screen's reading becomes the row (a protocol agent's reports own it once
        it has reported)."""
        if job.terminal is not terminal or not job.speaks or job.record.get("reported"):
            return
        if (reading.get("why") or {}).get("rule") == "held":
            for hook in list(self.on_held):
                hook(job, reading)     # the row stays as it was; the timeline says why
        state = reading.get("state")
        fields = {key: reading.get(key) for key in ("status", "waitingFor", "summary")}
        # A dialog's question and choices are on the row while it shows; once the screen
        # shows none (answered: a prompt, work), neither stays.
        fields["question"] = reading.get("question")
        fields["choices"] = list(reading.get("choices") or [])
        fields.update(self.unread.reading(job, terminal, reading))
        fields.update(limits.reading_fields(job, reading))
        record = job.record
        # Only the last line of a working screen moved: the screen holds it, no disk needs to.
        lasting = state != job.state or any(record.get(key) != value
                                            for key, value in fields.items() if key != "summary")
        self.registry.change(job, state=state if state in LIVE_STATES else None, lasting=lasting, **fields)

    def _apply_held(self, job, terminal, held):
        """The row says so while an attached person's draft holds roost's typing (issue 19)."""
        if job.terminal is terminal:
            self.registry.change(job, held=HELD_TEXT if terminal.held else None, lasting=False)

    # -- stopping -------------------------------------------------------------
    def stop(self, job, reaping=False):
        """SIGTERM to the job's group and every process with its identity, SIGKILL after
        the grace period; returns once none is left and the row says stopped."""
        live = job.running
        if job.run.phase == "running":
            self.registry.move(job, "stopping", reaping=reaping)
        left = processes.end_job_processes(job.id, lambda number: self.keeper.signal(job.id, number),
                                           self.stop_grace(), self.clock)
        if left:
            raise RoostError(BUSY, f"job {job.id}: processes {left} did not end")
        if live and not job.run.ended.wait(END_WAIT_S):
            # The exit never came (the keeper is gone): the processes are, so it ended.
            log.warning("job %s: no exit status came after its processes ended", job.id)
            job.run.exit = job.run.exit or recorded_exit(self.registry.job_dir(job), job.record.get("pid")) or {}
            self.ends.finish_soon(job)
            job.run.ended.wait(END_WAIT_S)
        return job

    def stop_time(self):
        """The longest a stop may take: the grace, SIGKILL's wait, the exit's wait (twice:
        once for the keeper's word, once for the end without it)."""
        return self.stop_grace() + processes.KILL_WAIT_S + 2 * END_WAIT_S

    # -- waking ---------------------------------------------------------------
    def wake(self, job, restart=False):
        """Start an ended (or reaped) job again: the resume argv when it has one. Returns
        the job, live; RoostError when it may not start (held back, cannot run)."""
        if job.run.active:
            return job
        self._wait_backoff(job, restart)
        return self.start(job, argv=sessions.resume_argv(job.launch))

    def _wait_backoff(self, job, restart):
        runs = job.record.get("runs") or {}
        deaths = runs.get("quickDeaths", 0)
        if restart:
            if deaths:
                self.registry.change(job, runs=dict(runs, quickDeaths=0))
            return
        if deaths >= MAX_QUICK_DEATHS:
            raise RoostError(BUSY, f"job {job.id} died within {QUICK_DEATH_MS // 1000} s of starting "
                                     f"{deaths} times in a row; it is not started again (respawn with "
                                     "restart to try anyway)")
        if deaths:
            delay_ms = BACKOFF_BASE_MS * 2 ** (deaths - 1)
            since = self.clock.now_ms() - (job.record.get("endedAt") or 0)
            if since < delay_ms:
                log.info("job %s died right after its start %d times: waiting %d ms", job.id, deaths, delay_ms - since)
                self.clock.sleep((delay_ms - since) / 1000.0)

    # -- the keeper -----------------------------------------------------------
    def keeper_lost(self):
        """The keeper went away: jobs that end now have no exit status to tell. Their
        ends come from the pty; a new keeper is started for the next spawn."""
        self.pty_error = KEEPER_LOST
        for job in self.registry.all():
            if job.running and job.terminal is not None:
                gevent.spawn(self.ends.finish_without_keeper, job, job.terminal)


class _TerminalHooks:
    """What a job's Terminal tells its runner. One small object, not two closures: a few
    hundred bytes less for each of hundreds of jobs."""

    __slots__ = ("runner", "job", "terminal")

    def __init__(self, runner, job, terminal):
        self.runner, self.job, self.terminal = runner, job, terminal

    def changed(self, reading):
        gevent.spawn(self.runner._apply_reading, self.job, self.terminal, reading)

    def held(self, held):
        gevent.spawn(self.runner._apply_held, self.job, self.terminal, held)

    def drained(self):
        if self.job.run.exit is not None:
            self.runner.ends.finish_soon(self.job)
