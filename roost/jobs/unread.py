"""A terminal agent whose screen its profile cannot read, said in its row.

A settled screen that matches none of its profile's patterns reads as unknown (status
null: roost cannot tell whether the agent works or waits, and types nothing into it).
Briefly that is normal (a start-up, a pause before a spinner); for longer than
`unreadAfterMs` (roost.json, default a minute) it most likely means the agent draws its
screen otherwise than its profile expects (a new release: `roost doctor`). The row then
carries `unreadSince`: when its screen stopped being readable (ms since the epoch). Any
reading that is not unknown (a pattern matched, or the screen moves again) clears it,
as does the run's end or a new start.
"""

import gevent

from roost.clock import now_ms

UNREAD_AFTER_MS = 60_000


def is_unknown(reading):
    """The screen matched none of its profile's patterns. (A plain job the kernel cannot
    read is unknown too, but no pattern of it is at fault: roost.term.kernel_reading.)"""
    return (reading.get("state") == "blocked" and reading.get("status") is None
            and (reading.get("why") or {}).get("rule") == "none")


class UnreadWatch:
    def __init__(self, registry, config):
        self.registry = registry
        self.config = config
        self._timers = {}       # job id -> (since ms, the greenlet that says so when due, terminal)

    def after_s(self):
        value = self.config.get("unreadAfterMs")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            value = UNREAD_AFTER_MS
        return value / 1000.0

    def reading(self, job, terminal, reading):
        """The row of `job` is about to be set from `reading` of `terminal`: the fields
        to set with it (`unreadSince: None` once the screen reads again), in the same
        change, so that no row shows the new reading beside the old field."""
        entry = self._timers.get(job.id)
        if is_unknown(reading) and entry is not None and entry[2] is terminal:
            return {}           # unknown since before: its timer runs
        self._forget(job)
        if is_unknown(reading):
            since = now_ms()
            timer = gevent.spawn_later(self.after_s(), self._due, job, terminal, since)
            self._timers[job.id] = (since, timer, terminal)
        return {"unreadSince": None} if job.record.get("unreadSince") is not None else {}

    def _forget(self, job):
        entry = self._timers.pop(job.id, None)
        if entry is not None and entry[1] is not gevent.getcurrent():
            entry[1].kill(block=False)

    def _due(self, job, terminal, since):
        entry = self._timers.get(job.id)
        if entry is None or entry[0] != since:
            return
        del self._timers[job.id]
        if job.terminal is not terminal or terminal.closed or not job.speaks or job.record.get("reported"):
            return
        if is_unknown(terminal.reading):
            self.registry.change(job, unreadSince=since)
