"""Running jobs: start one through the keeper, give it its Terminal, end it when the
keeper says its program exited, stop it, start it again, and adopt every job the keeper
holds when a daemon starts (issue 3 items 1, 6, 8).

A job ends once the keeper reported its program's exit and its pty was drained (or a
short wait for that passed: a grandchild may hold the pty open). The state follows the
exit: 0 is done, anything else failed with the status in `error`, and a job being
stopped is stopped whatever its status.
"""

import logging
import os
import signal

import gevent
import gevent.event

from roost.jobs import launch
from roost.jobs import processes as procs
from roost.errors import RoostError
from roost.jobs.record import ENDED_STATES, LIVE_STATES, now_ms
from roost.keeper.client import KeeperClient, KeeperError, KeeperRefused

log = logging.getLogger(__name__)

DRAIN_WAIT_S = 2.0          # after the exit, time for the pty's last output to be read
STOP_GRACE_MS = 3000        # SIGTERM to SIGKILL (roost.json "stopGraceMs")
END_WAIT_S = 10.0           # after the processes are gone, time for the exit to be told
# A job that keeps dying right after start is backed off, then left failed (issue 3
# item 6): a death within QUICK_DEATH_MS of its start counts; the next start waits
# BACKOFF_BASE_MS doubled per count; at MAX_QUICK_DEATHS it is not started again
# except by an explicit `respawn {restart: true}`.
QUICK_DEATH_MS = 5000
BACKOFF_BASE_MS = 250
MAX_QUICK_DEATHS = 5
SUMMARY_LIMIT = 500
KEEPER_LOST = "the keeper was lost; jobs started before keep running without it"


def describe_exit(exit_fields):
    if exit_fields.get("signal"):
        number = exit_fields["signal"]
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = f"signal {number}"
        return f"killed by {name} ({number})"
    return f"exited with status {exit_fields.get('code')}"


class JobRunner:
    def __init__(self, registry, daemon):
        self.registry = registry
        self.daemon = daemon
        self.keeper = KeeperClient(daemon.home, on_exited=self._exited, on_lost=self._keeper_lost)
        self._unclaimed = {}    # job id -> Event set when the keeper says it exited

    # -- starting -------------------------------------------------------------
    def start(self, job, argv=None):
        """Spawn the job's program (its launch argv, or `argv`) and give it a Terminal.
        Raises RoostError (bad_request) with the reason when it cannot run; the job is
        then failed with that reason."""
        record = job.record
        argv = list(argv or job.launch["argv"])
        job.starting = True
        job.ended.clear()
        self._retire(job)
        try:
            job.exit = None
            job.stopping = job.reaping = False
            env = launch.job_environ(job, self.daemon.socket_path, self.registry.job_dir(job))
            started_at = now_ms()
            try:
                pid, master = self.keeper.spawn(job.id, argv, env, record["cwd"],
                                                job.launch.get("rows") or 40, job.launch.get("cols") or 120,
                                                getattr(self.daemon, "user_umask", 0o022))
            except KeeperError as error:
                log.info("job %s could not start: %s", job.id, error)
                if job.state in ENDED_STATES and job.state != "stopped":
                    self.registry.change(job, error=str(error))
                else:
                    self.registry.change(job, state="failed", error=str(error), endedAt=now_ms(), pid=None)
                job.ended.set()
                # A program that cannot run is the caller's to fix; a keeper out of reach is ours.
                raise RoostError("bad_request" if isinstance(error, KeeperRefused) else "internal", str(error))
            job.run_pid = pid
            if self.daemon.pty_error == KEEPER_LOST:
                self.daemon.pty_error = None      # a new keeper serves
            # The terminal reads from now on: its first output need not wait for the disk.
            self._attach_terminal(job, master)
            self.registry.change(job, state="working", pid=pid, startedAt=started_at, endedAt=None,
                                 status="busy", waitingFor=None, question=None, choices=[],
                                 error=None, reaped=False, lastArgv=argv)
            log.info("job %s started: pid %d, %s", job.id, pid, argv[0])
        finally:
            job.starting = False
        early, job.early_exit = job.early_exit, None
        if early is not None:
            self._exited(early)   # it ended before its start was recorded
        from roost.jobs import replies as job_replies

        job_replies.kick(self.registry, job)
        return job

    def _retire(self, job):
        """Let go of a previous run's terminal that a grandchild still held open."""
        finisher, job.finisher = job.finisher, None
        if finisher is not None:
            finisher.kill(block=True)
        _stop_typing(job)
        terminal, job.terminal = job.terminal, None
        if terminal is not None:
            terminal.close()
            self.keeper.release(job.id, job.run_pid)

    def _attach_terminal(self, job, master):
        from roost.term.terminal import Terminal

        term = dict(job.launch.get("term") or {})
        term.pop("typeTask", None)     # roost.job_replies types the task, never the reader
        typed = bool(job.launch.get("taskInArgv") or job.record.get("typedOnce"))
        terminal = Terminal(job.id, master, self.registry.job_dir(job), term=term or None,
                            rows=job.launch.get("rows") or 40, cols=job.launch.get("cols") or 120,
                            typed=typed)
        hooks = _TerminalHooks(self, job, terminal)
        terminal.on_change, terminal.on_eof = hooks.changed, hooks.drained
        job.terminal = terminal
        job.finisher = None
        job.waiting.clear()
        terminal.start()

    def _apply_reading(self, job, terminal, reading):
        """The screen's reading becomes the row (a protocol agent's reports own it once
        it has reported)."""
        if job.terminal is not terminal or not job.running or job.stopping or job.record.get("reported"):
            return
        state = reading.get("state")
        fields = {key: reading.get(key) for key in ("status", "waitingFor", "summary")}
        if "question" in reading or "choices" in reading:
            fields["question"] = reading.get("question")
            fields["choices"] = list(reading.get("choices") or [])
        elif fields["waitingFor"] != "question":
            fields["question"] = None
        record = job.record
        # Only the last line of a working screen moved: the screen holds it, no disk needs to.
        lasting = state != job.state or any(record.get(key) != value
                                            for key, value in fields.items() if key != "summary")
        self.registry.change(job, state=state if state in LIVE_STATES else None, lasting=lasting, **fields)

    # -- ending ---------------------------------------------------------------
    def _exited(self, message):
        """The keeper says a job's program exited (called on the keeper's reader)."""
        job = self.registry.get(message.get("job"))
        if job is None:
            ended = self._unclaimed.get(message.get("job"))
            if ended is not None:
                ended.set()
            return
        if job.exit is not None:
            return
        if job.starting:
            job.early_exit = message
            return
        if message.get("pid") not in (None, job.record.get("pid")):
            return   # an earlier run of this job
        job.exit = message
        if job.finisher is None:
            job.finisher = gevent.spawn(self._finish, job)

    def _finish(self, job):
        terminal = job.terminal
        if terminal is not None and not terminal.eof.is_set():
            terminal.eof.wait(DRAIN_WAIT_S)
        exit_fields = job.exit or {}
        run_pid = job.run_pid
        fields = {"pid": None, "endedAt": exit_fields.get("at") or now_ms(), "status": None,
                  "waitingFor": None, "exit": {key: exit_fields.get(key) for key in ("code", "signal", "status")}}
        if terminal is not None:
            # The screen's last line as it was left (the reading's may be seconds old).
            shown = [line.strip() for line in terminal.text().splitlines() if line.strip()]
            if shown:
                fields["summary"] = shown[-1][:SUMMARY_LIMIT]
        runs = dict(job.record.get("runs") or {})
        ran_ms = fields["endedAt"] - (job.record.get("startedAt") or 0)
        runs["quickDeaths"] = 0
        fields["runs"] = runs
        if job.stopping:
            state = "stopped"
            fields["reaped"] = job.reaping
        elif exit_fields.get("code") == 0:
            state = "done"
        else:
            state = "failed"
            fields["error"] = describe_exit(exit_fields) if exit_fields else "its program ended (exit status unknown)"
            # Only a failure on its own counts toward the crash-loop hold, not a stop.
            if ran_ms < QUICK_DEATH_MS:
                runs["quickDeaths"] = (job.record.get("runs") or {}).get("quickDeaths", 0) + 1
            if runs["quickDeaths"] >= MAX_QUICK_DEATHS:
                fields["error"] += (f"; it died within {QUICK_DEATH_MS // 1000} s of starting "
                                    f"{runs['quickDeaths']} times in a row, so it is not started again "
                                    "until `respawn` with restart")
        if not job.live:
            state = None     # a protocol agent reported its end itself: its report stands
        self.registry.change(job, state=state, **fields)
        job.ended.set()
        log.info("job %s ended: %s (%s)", job.id, state, describe_exit(exit_fields) if exit_fields else "unknown")
        if terminal is not None:
            terminal.eof.wait()          # a grandchild may keep the pty open a while
            if job.terminal is terminal:
                _stop_typing(job)        # what it had not typed waits for the next start
                job.terminal = None
            terminal.close()
        self.keeper.release(job.id, run_pid)
        if job.finisher is gevent.getcurrent():
            job.finisher = None

    def _keeper_lost(self):
        """The keeper went away: jobs that end now have no exit status to tell. Their
        ends come from the pty; a new keeper is started for the next spawn."""
        self.daemon.pty_error = KEEPER_LOST
        for job in self.registry.all():
            if job.running and job.terminal is not None:
                terminal = job.terminal
                gevent.spawn(self._finish_without_keeper, job, terminal)

    def _finish_without_keeper(self, job, terminal):
        terminal.eof.wait()
        if job.exit is None and job.terminal is terminal:
            job.exit = _recorded_exit(self.registry.job_dir(job), job.record.get("pid")) or {}
            if job.finisher is None:
                job.finisher = gevent.spawn(self._finish, job)

    # -- stopping -------------------------------------------------------------
    def stop(self, job, reaping=False):
        """SIGTERM to the job's group and every process with its identity, SIGKILL after
        the grace period; returns once none is left and the row says stopped."""
        live = job.running
        if live:
            job.stopping = True
            job.reaping = reaping
        grace = self._stop_grace()
        left = procs.end_job_processes(job.id, lambda number: self.keeper.signal(job.id, number), grace)
        if left:
            raise RoostError("busy", f"job {job.id}: processes {left} did not end")
        if live and not job.ended.wait(END_WAIT_S):
            # The exit never came (the keeper is gone): the processes are, so it ended.
            log.warning("job %s: no exit status came after its processes ended", job.id)
            job.exit = job.exit or _recorded_exit(self.registry.job_dir(job), job.record.get("pid")) or {}
            if job.finisher is None:
                job.finisher = gevent.spawn(self._finish, job)
            job.ended.wait(END_WAIT_S)
        return job

    # -- waking ---------------------------------------------------------------
    def wake(self, job, restart=False):
        """Start an ended (or reaped) job again: the resume argv when it has one."""
        if job.running or job.starting:
            return job
        self._wait_backoff(job, restart)
        resume = job.launch.get("resumeCommand")
        return self.start(job, argv=resume or None)

    def _wait_backoff(self, job, restart):
        runs = job.record.get("runs") or {}
        deaths = runs.get("quickDeaths", 0)
        if restart:
            if deaths:
                self.registry.change(job, runs=dict(runs, quickDeaths=0))
            return
        if deaths >= MAX_QUICK_DEATHS:
            raise RoostError("busy", f"job {job.id} died within {QUICK_DEATH_MS // 1000} s of starting "
                                     f"{deaths} times in a row; it is not started again (respawn with "
                                     "restart to try anyway)")
        if deaths:
            delay_ms = BACKOFF_BASE_MS * 2 ** (deaths - 1)
            since = now_ms() - (job.record.get("endedAt") or 0)
            if since < delay_ms:
                log.info("job %s died right after its start %d times: waiting %d ms", job.id, deaths, delay_ms - since)
                gevent.sleep((delay_ms - since) / 1000.0)

    # -- the daemon's start and stop ------------------------------------------
    def adopt(self):
        """Take every job the keeper holds (pid unchanged, a new Terminal on its pty,
        output written meanwhile read from it) and settle the rest from exit.json."""
        held = self.keeper.fds()
        adopted = set()
        for info, master in held:
            job = self.registry.get(info.get("job"))
            exited = info.get("exited")
            if job is None:
                # Removed while it ran (a crash during rm): it has no record to live in.
                log.warning("the keeper holds %s (pid %s) that no record claims; ending it",
                            info.get("job"), info.get("pid"))
                os.close(master)
                if not exited:
                    self._unclaimed[info.get("job")] = gevent.event.Event()
                    self.keeper.signal(info.get("job"), signal.SIGTERM)
                self.keeper.release(info.get("job"))
                gevent.spawn(self._remove_unclaimed, info.get("job"))
                continue
            adopted.add(job.id)
            if not job.running and exited:
                os.close(master)          # its end is on record already
                self.keeper.release(job.id, info.get("pid"))
                continue
            job.run_pid = info.get("pid")
            if job.record.get("pid") != info.get("pid"):
                # Spawned, but the daemon died before it recorded so.
                self.registry.change(job, state=None if job.live else "working", pid=info.get("pid"), endedAt=None)
            job.ended.clear()
            self._attach_terminal(job, master)
            if exited:
                job.exit = dict(exited, job=job.id)
                if job.finisher is None:
                    job.finisher = gevent.spawn(self._finish, job)
            log.info("job %s adopted: pid %s%s", job.id, info.get("pid"), " (exited meanwhile)" if exited else "")
        for job in self.registry.all():
            if job.running and job.id not in adopted:
                self._settle_unheld(job)

    def _stop_grace(self):
        """Seconds from SIGTERM to SIGKILL (roost.json "stopGraceMs")."""
        return (self.daemon.config().get("stopGraceMs") or STOP_GRACE_MS) / 1000.0

    def _remove_unclaimed(self, job_id):
        """A job started but never recorded leaves a directory without job.json. The
        keeper writes the job's exit.json there when it ends: remove it only after that
        (SIGKILL after the grace), and let no failure here stop the adoption of others."""
        from roost import store

        ended = self._unclaimed.get(job_id)
        grace = self._stop_grace()
        if ended is not None and not ended.wait(grace):
            self.keeper.signal(job_id, signal.SIGKILL)
            ended.wait(grace)
        self._unclaimed.pop(job_id, None)
        if not isinstance(job_id, str) or not job_id.isalnum():
            return    # roost's ids are hex: anything else is not a directory of ours
        directory = self.registry.job_dir(job_id)
        if os.path.isdir(directory) and not os.path.exists(os.path.join(directory, "job.json")):
            try:
                store.remove_tree(directory)
            except OSError as error:
                log.warning("cannot remove %s, left by a job never recorded: %s", directory, error)

    def _settle_unheld(self, job):
        """A job on record as live that the keeper does not hold: it ended and was
        released, or the keeper itself is new (the machine restarted)."""
        recorded = _recorded_exit(self.registry.job_dir(job), job.record.get("pid"))
        if recorded:
            job.exit = recorded
            self._finish(job)
            return
        self.registry.change(job, state="stopped" if job.live else None, pid=None, endedAt=now_ms(),
                             status=None, waitingFor=None,
                             error="it ended while roost was away (exit status unknown)")
        job.ended.set()

    def shut_down(self, keep_workers):
        jobs = [job for job in self.registry.all()]
        if keep_workers:
            for job in jobs:
                if job.terminal is not None:
                    job.terminal.close()   # the keeper's copy keeps the pty; output waits in it
            self.keeper.close()
            return
        stops = [gevent.spawn(self.stop, job) for job in jobs if job.running]
        gevent.joinall(stops, timeout=STOP_GRACE_MS / 1000.0 + 10)
        for job in jobs:
            if job.finisher is not None:
                job.finisher.join(timeout=DRAIN_WAIT_S + 1)
        self.keeper.bye()
        self.keeper.close()


class _TerminalHooks:
    """What a job's Terminal tells its runner. One small object, not two closures: a few
    hundred bytes less for each of hundreds of jobs."""

    __slots__ = ("runner", "job", "terminal")

    def __init__(self, runner, job, terminal):
        self.runner, self.job, self.terminal = runner, job, terminal

    def changed(self, reading):
        # Replies waiting to be typed wait on this (roost.job_replies).
        if reading.get("state") == "working":
            self.job.waiting.clear()
        else:
            self.job.waiting.set()
        gevent.spawn(self.runner._apply_reading, self.job, self.terminal, reading)

    def drained(self):
        job = self.job
        if job.exit is not None and job.finisher is None:
            job.finisher = gevent.spawn(self.runner._finish, job)


def _stop_typing(job):
    worker, job.reply_worker = job.reply_worker, None
    if worker is not None and worker is not gevent.getcurrent():
        worker.kill(block=False)


def _recorded_exit(job_dir, pid):
    """exit.json, when the keeper wrote one for this run (its pid)."""
    from roost import store

    recorded = store.read_json(os.path.join(job_dir, "exit.json"))
    if not recorded or (pid is not None and recorded.get("pid") != pid):
        return None
    return recorded
