"""Answers and events queued for clients that do not read them, bounded by who the
clients are (issue 26 item 5).

Each connection may leave 16 MiB unread (spec "Others"); past that it is dropped. That
alone let one job hold 1024 connections x 16 MiB of the daemon's memory (`list` is open
to jobs). So the bytes a connection leaves unread also count against a budget its
peers share: every connection from processes of one job shares that job's (a few MiB),
each of the person's processes has one of its own (the spec's 16 MiB), and all of them
together are bounded too. A connection whose queue would pass any of them is dropped,
and its bytes are given back the moment it closes (memory returned to the system once a
lot was: glibc keeps freed buffers of this size otherwise).
"""

import ctypes
import ctypes.util
import logging

log = logging.getLogger(__name__)

PER_CONNECTION = 16 * 1024 * 1024     # the spec's
PER_JOB = 4 * 1024 * 1024             # every connection of one job's processes, together
PER_PROCESS = 16 * 1024 * 1024        # every connection of one of the person's processes
TOTAL = 256 * 1024 * 1024             # every connection
TRIM_AFTER = 4 * 1024 * 1024          # given back at once: ask the allocator to return it


class Unread:
    """The daemon's budgets of unread bytes, by group (a job, a person's process)."""

    def __init__(self, per_job=PER_JOB, per_process=PER_PROCESS, total=TOTAL):
        self.per_job, self.per_process, self.total = per_job, per_process, total
        self.held = {}          # group -> bytes unread
        self.all = 0
        self.freed = 0          # given back since the allocator was last asked to trim

    def account(self, inside, peer_pid):
        """The Account of a new connection: `inside` (roost.jobs.origins.Inside, None for
        the person's) and its peer's pid."""
        if inside is None:
            return Account(self, ("process", peer_pid), self.per_process)
        job = getattr(inside, "job", None)
        # A process inside a job roost cannot name shares one budget with every other such.
        return Account(self, ("job", job.id if job is not None else None), self.per_job)

    def _take(self, group, size, limit):
        held = self.held.get(group, 0) + size
        if held > limit or self.all + size > self.total:
            return False
        self.held[group] = held
        self.all += size
        return True

    def _give(self, group, size):
        held = self.held.get(group, 0) - size
        if held > 0:
            self.held[group] = held
        else:
            self.held.pop(group, None)
        self.all -= size
        self.freed += size
        if self.freed >= TRIM_AFTER:
            self.freed = 0
            _trim()


class Account:
    """One connection's share: `take(n)` before queueing n more bytes (False: over a
    budget, drop it), `give(n)` as the socket takes them or the connection goes."""

    __slots__ = ("budgets", "group", "limit", "held")

    def __init__(self, budgets, group, limit):
        self.budgets, self.group, self.limit = budgets, group, limit
        self.held = 0

    def take(self, size):
        if self.held + size > PER_CONNECTION or not self.budgets._take(self.group, size, self.limit):
            return False
        self.held += size
        return True

    def give(self, size):
        size = min(size, self.held)
        if size:
            self.held -= size
            self.budgets._give(self.group, size)

    def give_all(self):
        self.give(self.held)

    def describe(self):
        kind, which = self.group
        return f"a process of job {which}" if kind == "job" and which else \
            "a process inside a job" if kind == "job" else f"process {which}"


_libc = []


def _trim():
    """Return freed heap to the system (glibc's malloc_trim; elsewhere nothing)."""
    try:
        if not _libc:
            _libc.append(ctypes.CDLL(ctypes.util.find_library("c") or None))
        _libc[0].malloc_trim(0)
    except (OSError, AttributeError):
        pass
