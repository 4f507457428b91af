"""Idle reaping (spec DM-4): with `"reapIdleAfterMs"` in roost.json (off when absent), a
live, unpinned job that has waited for the user that long is stopped and marked
`reaped`; attaching or replying starts it again (JobRunner.wake).

One timer per job, armed when its row starts waiting and cancelled when it stops
waiting, is pinned or ends: no polling. The setting is read when a timer is armed, so
a change to it applies from each job's next wait (and to every waiting job at the
daemon's start).
"""

import logging

log = logging.getLogger(__name__)

SETTING = "reapIdleAfterMs"


class Reaper:
    def __init__(self, registry, runner, config, clock):
        self.registry = registry
        self.runner = runner
        self.config = config
        self.clock = clock            # roost.clock: when a wait has lasted long enough
        self._timers = {}             # job id -> (its token, the timer that reaps it when due)

    def arm_all(self):
        for job in self.registry.all():
            self._rearm(job)

    def row_changed(self, row, before):
        job = self.registry.get(row["id"])
        if job is None:
            return
        if before is not None and before.get("stateSince") == row.get("stateSince") \
                and before.get("status") == row.get("status") and before.get("pinned") == row.get("pinned") \
                and job.id in self._timers:
            return   # still the same wait: its timer stands
        self._rearm(job)

    def _after_ms(self):
        value = self.config.get(SETTING)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            return None
        return value

    def _rearm(self, job):
        armed = self._timers.pop(job.id, None)
        if armed is not None:
            armed[1].kill(block=False)
        if not _idle(job):
            return
        after = self._after_ms()
        if after is None:
            return
        now = self.clock.now_ms()
        due_in = max(0.0, (job.record.get("stateSince", now) + after - now) / 1000.0)
        token = object()
        self._timers[job.id] = (token, self.clock.call_later(due_in, self._reap, job, token))

    def _reap(self, job, token):
        if self._timers.get(job.id, (None,))[0] is token:
            del self._timers[job.id]
        if not _idle(job) or self.registry.get(job.id) is not job:
            return
        log.info("job %s waited %d ms unpinned: reaping it", job.id,
                 self.clock.now_ms() - job.record.get("stateSince", 0))
        try:
            self.runner.stop(job, reaping=True)
        except Exception:
            log.exception("reaping job %s failed", job.id)


def _idle(job):
    record = job.record
    # M44: the concierge waits for digests by design: reaped, it would miss them.
    return (job.speaks and record.get("state") == "blocked" and record.get("status") == "waiting"
            and not record.get("pinned") and record.get("role") != "concierge")
