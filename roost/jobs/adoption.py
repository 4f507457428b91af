"""The jobs a daemon finds and leaves: at its start it adopts every job the keeper holds
(pid unchanged, a new Terminal on its pty, output written meanwhile read from it) and
settles the rest from exit.json (or, when the machine restarted, brings them back:
roost.jobs.recovery); when it leaves, the jobs go on for the next daemon
(keepWorkers) or are stopped, every one."""

import logging
import os
import signal

import gevent
import gevent.event

from roost import store
from roost.clock import now_ms
from roost.jobs import recovery
from roost.jobs.record import end_state
from roost.jobs.run_end import DRAIN_WAIT_S, recorded_exit
from roost.unix import bwrap

log = logging.getLogger(__name__)

# The end of a job the keeper no longer holds and left no exit status for (the machine,
# or the keeper, restarted): what a schedule's autoResume looks for (roost.schedule).
ENDED_AWAY = "it ended while roost was away (exit status unknown)"
# The adopted jobs' first judgements (each a row written, a timeline entry) are spread
# this far apart, not made all at once when their screens settle together (issue 21).
JUDGE_APART_S = 0.005


def adopt(runner):
    """Take every job the keeper holds; settle the ones on record as running that it
    does not hold."""
    registry, keeper = runner.registry, runner.keeper
    adopted = set()
    for index, (info, pty) in enumerate(keeper.fds()):
        job = registry.get(info.get("job"))
        exited = info.get("exited")
        if job is None:
            _end_unclaimed(runner, info, pty)
            continue
        adopted.add(job.id)
        if not job.running and exited:
            pty.close()               # its end is on record already
            keeper.release(job.id, info.get("pid"))
            continue
        job.run.pid = info.get("pid")
        if job.record.get("pid") != info.get("pid"):
            # Spawned, but the daemon died before it recorded so.
            if not job.run.active:
                registry.move(job, "starting")
                registry.move(job, "running", state="working", pid=info.get("pid"), endedAt=None,
                              sandboxed=bwrap.is_jail(info.get("pid")))
            else:
                registry.change(job, pid=info.get("pid"), endedAt=None)
        runner.attach_terminal(job, pty, judge_later=index * JUDGE_APART_S)
        if exited:
            job.run.exit = dict(exited, job=job.id)
            runner.ends.finish_soon(job)
        else:
            runner.announce_started(job, adopted=True)   # what waits on its book is typed now too
        log.info("job %s adopted: pid %s%s", job.id, info.get("pid"), " (exited meanwhile)" if exited else "")
    unheld = [job for job in registry.all() if job.running and job.id not in adopted]
    unheld = [job for job in unheld if not _ended_on_record(runner, job)]
    if recovery.restarted(runner, unheld):
        recovery.recover(runner, unheld)     # the machine restarted: each comes back or fails
        return
    for job in unheld:
        _settle_unheld(runner, job)


def _ended_on_record(runner, job):
    """The keeper saw it end (exit.json): its end is settled from that."""
    recorded = recorded_exit(runner.registry.job_dir(job), job.record.get("pid"))
    if not recorded:
        return False
    job.run.exit = recorded
    runner.ends.finish(job)
    return True


def _end_unclaimed(runner, info, pty):
    """Removed while it ran (a crash during rm), or started but never recorded: it has
    no record to live in, so it is ended."""
    job_id = info.get("job")
    log.warning("the keeper holds %s (pid %s) that no record claims; ending it", job_id, info.get("pid"))
    pty.close()
    if not info.get("exited"):
        runner.ends.unclaimed[job_id] = gevent.event.Event()
        runner.keeper.signal(job_id, signal.SIGTERM)
    runner.keeper.release(job_id)
    gevent.spawn(_remove_unclaimed, runner, job_id)


def _remove_unclaimed(runner, job_id):
    """A job started but never recorded leaves a directory without job.json. The keeper
    writes the job's exit.json there when it ends: remove it only after that (SIGKILL
    after the grace), and let no failure here stop the adoption of others."""
    ended = runner.ends.unclaimed.get(job_id)
    grace = runner.stop_grace()
    if ended is not None and not runner.clock.wait(ended, grace):
        runner.keeper.signal(job_id, signal.SIGKILL)
        runner.clock.wait(ended, grace)
    runner.ends.unclaimed.pop(job_id, None)
    if not isinstance(job_id, str) or not job_id.isalnum():
        return    # roost's ids are hex: anything else is not a directory of ours
    directory = runner.registry.job_dir(job_id)
    if os.path.isdir(directory) and not os.path.exists(os.path.join(directory, "job.json")):
        try:
            store.remove_tree(directory)
        except OSError as error:
            log.warning("cannot remove %s, left by a job never recorded: %s", directory, error)


def _settle_unheld(runner, job):
    """A job on record as running that the keeper does not hold and whose end it never
    recorded: it ended while roost was away."""
    runner.registry.move(job, "ended", state=end_state(False, None, job.state), pid=None,
                         endedAt=now_ms(), status=None, waitingFor=None, resetsAt=None,
                         error=ENDED_AWAY)


def shut_down(runner, keep_workers):
    """keepWorkers: the keeper and every job go on for the next daemon; otherwise every
    job is stopped (as long as its stop takes: roost.json's grace included) and the keeper
    leaves once they are gone."""
    jobs = runner.registry.all()
    if keep_workers:
        for job in jobs:
            if job.terminal is not None:
                job.terminal.close()   # the keeper's copy keeps the pty; output waits in it
        runner.keeper.close()
        return
    stops = [gevent.spawn(runner.stop, job) for job in jobs if job.running]
    gevent.joinall(stops, timeout=runner.stop_time() + 1)
    for job in jobs:
        if job.finisher is not None:
            job.finisher.join(timeout=DRAIN_WAIT_S + 1)
    runner.keeper.bye()
    runner.keeper.close()
