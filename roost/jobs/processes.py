"""Finding and ending every process of a job, grandchildren that left its process group
included: each carries the job's identity in its environment (CONTRACT.md), which
/proc/<pid>/environ shows as it was at exec."""

import logging
import os
import signal

from roost import blocking

log = logging.getLogger(__name__)

POLL_S = 0.05
KILL_WAIT_S = 5.0


def _own_environs(skip=None):
    """(pid, environment with a leading NUL) of each of this user's live processes; a
    zombie shows an empty environment, so what has ended carries nothing."""
    uid = os.getuid()
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == skip:
            continue
        try:
            if os.stat(f"/proc/{name}").st_uid != uid:
                continue
            with open(f"/proc/{name}/environ", "rb") as handle:
                yield int(name), b"\0" + handle.read()
        except OSError:
            continue


def job_processes(job_id):
    """Pids of this user's processes whose environment names the job (either name)."""
    markers = (f"\0ROOST_JOB_ID={job_id}\0".encode(), f"\0PI_JOB_ID={job_id}\0".encode())
    return [pid for pid, environ in _own_environs(skip=os.getpid())
            if markers[0] in environ or markers[1] in environ]


_ID_MARKERS = (b"\0ROOST_JOB_ID=", b"\0PI_JOB_ID=")


def jobs_with_processes():
    """The job ids some live process of this user carries (one pass over /proc)."""
    found = set()
    for _pid, environ in _own_environs():
        for marker in _ID_MARKERS:
            start = environ.find(marker)
            if start >= 0:
                end = environ.find(b"\0", start + len(marker))
                found.add(environ[start + len(marker):end].decode("utf-8", "replace"))
    return found


def scan(job_id):
    """job_processes() off the loop: reading every process's environment takes a while."""
    return blocking.call(job_processes, job_id)


def _signal_each(pids, number):
    for pid in pids:
        try:
            os.kill(pid, number)
        except (ProcessLookupError, PermissionError):
            pass


def end_job_processes(job_id, signal_group, grace_s, clock):
    """SIGTERM to the job's group and to each process of it found elsewhere, SIGKILL to
    what is left after `grace_s` by `clock` (roost.clock); returns the pids still there
    after that (none, unless something ignores SIGKILL, like a process stuck in the kernel).

    `signal_group(number)` signals the job's process group (through the keeper, which
    knows whether the pid is still its own)."""
    signal_group(signal.SIGTERM)
    signal_group(signal.SIGCONT)     # a stopped process acts on SIGTERM only once running
    told = set()
    left = scan(job_id)
    deadline = clock.monotonic() + grace_s
    while left and clock.monotonic() < deadline:
        fresh = [pid for pid in left if pid not in told]   # each is told once
        _signal_each(fresh, signal.SIGTERM)
        _signal_each(fresh, signal.SIGCONT)
        told.update(fresh)
        clock.sleep(POLL_S)
        left = scan(job_id)
    if not left:
        return []
    log.info("job %s: %d processes outlived SIGTERM; sending SIGKILL", job_id, len(left))
    signal_group(signal.SIGKILL)
    _signal_each(left, signal.SIGKILL)
    deadline = clock.monotonic() + KILL_WAIT_S
    while left and clock.monotonic() < deadline:
        clock.sleep(POLL_S)
        left = scan(job_id)
        _signal_each(left, signal.SIGKILL)
    if left:
        log.error("job %s: processes %s outlived SIGKILL", job_id, left)
    return left
