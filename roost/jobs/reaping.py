"""Idle reaping (spec DM-4): with `"reapIdleAfterMs"` in roost.json (off when absent), a
live, unpinned job that has waited for the user that long is stopped and marked
`reaped`; attaching or replying starts it again (JobRegistry.wake).

One timer per job, armed when its row starts waiting and cancelled when it stops
waiting, is pinned or ends: no polling. The setting is read when a timer is armed, so
a change to it applies from each job's next wait (and to every waiting job at the
daemon's start).
"""

import logging

import gevent

from roost.jobs.record import now_ms

log = logging.getLogger(__name__)

SETTING = "reapIdleAfterMs"


def install(registry):
    registry.on_row_change.append(lambda row, before: _row_changed(registry, row, before))


def arm_all(registry):
    for job in registry.all():
        _rearm(registry, job)


def _row_changed(registry, row, before):
    job = registry.get(row["id"])
    if job is None:
        return
    if before is not None and before.get("stateSince") == row.get("stateSince") \
            and before.get("status") == row.get("status") and before.get("pinned") == row.get("pinned") \
            and job.reap_timer is not None:
        return   # still the same wait: its timer stands
    _rearm(registry, job)


def _idle(job):
    record = job.record
    return (job.running and record.get("state") == "blocked" and record.get("status") == "waiting"
            and not record.get("pinned") and not job.stopping)


def _after_ms(registry):
    value = registry.daemon.config().get(SETTING)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        return None
    return value


def _rearm(registry, job):
    if job.reap_timer is not None:
        job.reap_timer.kill(block=False)
        job.reap_timer = None
    if not _idle(job):
        return
    after = _after_ms(registry)
    if after is None:
        return
    due_in = max(0.0, (job.record.get("stateSince", now_ms()) + after - now_ms()) / 1000.0)
    job.reap_timer = gevent.spawn_later(due_in, _reap, registry, job)


def _reap(registry, job):
    job.reap_timer = None
    if not _idle(job) or registry.get(job.id) is not job:
        return
    log.info("job %s waited %d ms unpinned: reaping it", job.id, now_ms() - job.record.get("stateSince", 0))
    try:
        registry.runner.stop(job, reaping=True)
    except Exception:
        log.exception("reaping job %s failed", job.id)
