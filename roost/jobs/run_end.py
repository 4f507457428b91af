"""How a job's run ends: the keeper says its program exited, its pty is drained (or a
short wait for that passed: a grandchild may hold the pty open), and the run moves to
`ended` with the row's end (roost.jobs.record.end_state): `stopped` when a stop was under
way, `failed` with the exit status in `error` when the program failed, else `done`.
"""

import logging
import os
import signal

import gevent

from roost import store
from roost.clock import now_ms
from roost.jobs import jail
from roost.jobs.record import end_state
from roost.unix import bwrap

log = logging.getLogger(__name__)

DRAIN_WAIT_S = 2.0          # after the exit, time for the pty's last output to be read
SUMMARY_LIMIT = 500
# A job that keeps dying right after its start is backed off, then left failed (see
# JobRunner.wake): a death within QUICK_DEATH_MS of its start counts.
QUICK_DEATH_MS = 5000
MAX_QUICK_DEATHS = 5


def describe_exit(exit_fields):
    if exit_fields.get("signal"):
        number = exit_fields["signal"]
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = f"signal {number}"
        return f"killed by {name} ({number})"
    if exit_fields.get("code") is None:
        return "its program ended (exit status unknown)"
    return f"exited with status {exit_fields.get('code')}"


def recorded_exit(job_dir, pid):
    """exit.json, when the keeper wrote one for this run (its pid)."""
    recorded = store.read_json(os.path.join(job_dir, "exit.json"))
    if not recorded or (pid is not None and recorded.get("pid") != pid):
        return None
    return recorded


class RunEnds:
    """Ends runs: on the keeper's word of an exit, or without it (the keeper was lost)."""

    def __init__(self, registry, keeper):
        self.registry = registry
        self.keeper = keeper
        self.unclaimed = {}     # job id -> Event set when the keeper says it exited

    def exited(self, message):
        """The keeper says a job's program exited (called on the keeper's reader)."""
        job = self.registry.get(message.get("job"))
        if job is None:
            ended = self.unclaimed.get(message.get("job"))
            if ended is not None:
                ended.set()
            return
        run = job.run
        if run.exit is not None:
            return
        if run.phase == "starting":
            run.early_exit = message
            return
        if message.get("pid") not in (None, job.record.get("pid")):
            return   # an earlier run of this job
        run.exit = message
        self.finish_soon(job)

    def finish_soon(self, job):
        if job.finisher is None:
            job.finisher = gevent.spawn(self.finish, job)

    def finish_without_keeper(self, job, terminal):
        """The keeper was lost: the end comes from the pty, the status from exit.json."""
        terminal.eof.wait()
        if job.run.exit is None and job.terminal is terminal:
            job.run.exit = recorded_exit(self.registry.job_dir(job), job.record.get("pid")) or {}
            self.finish_soon(job)

    def finish(self, job):
        terminal = job.terminal
        if terminal is not None and not terminal.eof.is_set():
            terminal.eof.wait(DRAIN_WAIT_S)
        run = job.run
        exit_fields = run.exit or {}
        if job.record.get("sandboxed"):
            exit_fields = bwrap.exit_fields(exit_fields)     # bwrap's 128 + n: killed by signal n
        run_pid = run.pid
        ended_at = exit_fields.get("at") or now_ms()
        fields = {"pid": None, "endedAt": ended_at, "status": None, "waitingFor": None, "resetsAt": None,
                  "unreadSince": None,
                  "exit": {key: exit_fields.get(key) for key in ("code", "signal", "status")}}
        screen = terminal.text() if terminal is not None else ""
        # The screen's last line as it was left (the reading's may be seconds old).
        shown = [line.strip() for line in screen.splitlines() if line.strip()]
        if shown:
            fields["summary"] = shown[-1][:SUMMARY_LIMIT]
        state = end_state(run.phase == "stopping", exit_fields, job.state)
        runs = dict(job.record.get("runs") or {}, quickDeaths=0)
        if state == "stopped":
            fields["reaped"] = run.reaping
        elif state == "failed" and exit_fields.get("code") != 0:
            fields["error"] = describe_exit(exit_fields)
            refused = jail.read_only_note(screen) if job.record.get("sandboxed") else None
            if refused:
                fields["error"] += "; " + refused
            # Only a failure on its own counts toward the crash-loop hold, not a stop.
            if ended_at - (job.record.get("startedAt") or 0) < QUICK_DEATH_MS:
                runs["quickDeaths"] = (job.record.get("runs") or {}).get("quickDeaths", 0) + 1
            if runs["quickDeaths"] >= MAX_QUICK_DEATHS:
                fields["error"] += (f"; it died within {QUICK_DEATH_MS // 1000} s of starting "
                                    f"{runs['quickDeaths']} times in a row, so it is not started again "
                                    "until `respawn` with restart")
        fields["runs"] = runs
        self.registry.move(job, "ended", state=state, **fields)
        log.info("job %s ended: %s (%s)", job.id, state, describe_exit(exit_fields))
        if terminal is not None:
            terminal.eof.wait()          # a grandchild may keep the pty open a while
            if job.terminal is terminal:
                job.terminal = None      # what it had not typed waits for the next start
            terminal.close()
        self.keeper.release(job.id, run_pid)
        if job.finisher is gevent.getcurrent():
            job.finisher = None
