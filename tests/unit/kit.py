"""What the unit tier's tests share: a registry of real jobs on a scratch home with an
injected clock, and the small recorders that stand where the daemon's other parts would
(the feed, roost.json)."""

import os

from roost.clock import ManualClock
from roost.jobs.registry import JobRegistry


class Feed:
    """Stands for roost.events.bus.EventBus: what was published, in order."""

    def __init__(self):
        self.events = []

    def publish(self, kind, text, job_id=None, name=None, **fields):
        self.events.append(dict(fields, kind=kind, text=text, id=job_id))


class Settings:
    """Stands for roost.config.Config: roost.json's values, as given."""

    def __init__(self, **values):
        self.values = values

    def get(self, key, default=None):
        return self.values.get(key, default)

    def current(self):
        return self.values


def registry(tmp_path, clock=None):
    """A real JobRegistry on a scratch home, its clock a ManualClock; (registry, clock, feed)."""
    home = str(tmp_path)
    os.makedirs(os.path.join(home, "jobs"), exist_ok=True)
    clock = clock or ManualClock()
    feed = Feed()
    return JobRegistry(home, feed, clock), clock, feed


def running_job(jobs, name="agent", launch=None, **record):
    """A job whose run was started and runs (as the runner would move it), with `record`."""
    job = jobs.create({"name": name, "cwd": "/tmp"}, dict({"argv": ["agent"]}, **(launch or {})))
    jobs.move(job, "starting", state="working")
    jobs.move(job, "running", pid=4242)
    if record:
        jobs.change(job, **record)
    return job
