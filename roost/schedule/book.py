"""The schedules as roost keeps them (M39, M40): `$ROOST_HOME/schedules.json` (version
1, through roost.store, fields this version does not know kept), each written before the
op that changed it answers.

A schedule either starts a session on its clock (`launch`, a DispatchArgs, and its
`task`) or, beyond the spec, sends `text` to a live session (`target`, the job's id).
Its row is the spec's ScheduleRow; a target schedule's also says `target` and `text`.
"""

import logging
import os

import gevent.lock

from roost import store
from roost.errors import FULL, TOO_LONG, RoostError, bad_request, not_found
from roost.jobs.launcher import read_dispatch
from roost.schedule import when

log = logging.getLogger(__name__)

FILE = "schedules.json"
VERSION = 1
MAX_SCHEDULES = 2000
NAME_LIMIT = 100
TEXT_LIMIT = 4000


class Schedule:
    """One schedule: its kept record, and the rule its `when` says."""

    def __init__(self, record, zone=None):
        self.record = record
        self.rule = when.parse(record["when"], zone)

    @property
    def name(self):
        return self.record["name"]

    @property
    def next_at(self):
        return self.record.get("nextAt")

    @property
    def active(self):
        return not self.record.get("paused") and self.record.get("nextAt") is not None

    def following(self, at_ms):
        """The next slot after `at_ms`."""
        return self.rule.next_after(at_ms, self.record.get("createdAt") or at_ms)

    def row(self):
        record = self.record
        launch = record.get("launch") or {}
        row = {
            "name": record["name"], "when": record["when"], "task": record.get("task"),
            "agent": record.get("agent") or launch.get("profile") or launch.get("kind") or "shell",
            "cwd": record.get("cwd") or launch.get("cwd") or "",
            "model": launch.get("model"),
            "paused": bool(record.get("paused")), "catchUp": bool(record.get("catchUp")),
            "nextAt": None if record.get("paused") else record.get("nextAt"),
            "lastRunAt": record.get("lastRunAt"), "lastJob": record.get("lastJob"),
            "lastSkip": record.get("lastSkip"),
        }
        if record.get("target"):
            row.update(target=record["target"], targetName=record.get("targetName"), text=record.get("text"))
        return row


class ScheduleBook:
    def __init__(self, home, registry, config, clock):
        self.path = os.path.join(home, FILE)
        self.clock = clock          # roost.clock: a schedule's next slot is after its now
        self.registry = registry
        self.config = config
        self.data = {}
        self.schedules = {}         # name -> Schedule, in the order they were added
        self._writing = gevent.lock.Semaphore()

    def load(self):
        self.data = store.read_json(self.path) or {}
        if self.data.get("version", VERSION) > VERSION:
            log.warning("%s is of a newer version (%s): read as version %d", self.path, self.data.get("version"),
                        VERSION)
        for record in self.data.get("schedules") or []:
            if not isinstance(record, dict) or not isinstance(record.get("name"), str):
                continue
            try:
                self.schedules[record["name"]] = Schedule(record)
            except RoostError as error:
                log.warning("schedule %r is kept but not run: %s", record.get("name"), error.text)

    def save(self):
        # One write at a time, each of the state as it is then: the last to finish is the newest.
        with self._writing:
            records = [schedule.record for schedule in self.schedules.values()]
            store.write_json(self.path, dict(self.data, version=VERSION, schedules=records))

    def get(self, name):
        if not isinstance(name, str) or not name:
            raise bad_request("name is required")
        schedule = self.schedules.get(name)
        if schedule is None:
            raise not_found(f"no schedule {name!r}")
        return schedule

    def add(self, args):
        """A new schedule from `schedule-add`'s arguments (checked: a launch that could not
        run now is refused now, not at 3 a.m.)."""
        name = " ".join(str(args.get("name") or "").split())
        if not isinstance(args.get("name"), str) or not name:
            raise bad_request("name is required")
        if len(name) > NAME_LIMIT:
            raise bad_request(f"a schedule's name is at most {NAME_LIMIT} characters")
        if name in self.schedules:
            raise bad_request(f"a schedule named {name!r} exists: remove it first (schedule-rm)")
        if len(self.schedules) >= MAX_SCHEDULES:
            raise RoostError(FULL, f"at most {MAX_SCHEDULES} schedules")
        if not isinstance(args.get("when"), str):
            raise bad_request("when is required")
        now = self.clock.now_ms()
        record = {"name": name, "when": when.normal(args["when"]), "createdAt": now, "paused": False,
                  "catchUp": _flag(args, "catchUp"), "lastRunAt": None, "lastJob": None, "lastSkip": None}
        launch, target = args.get("launch"), args.get("target")
        if (launch is None) == (target is None):
            raise bad_request("a schedule takes launch (a session to start) or target and text (a session to tell)")
        if launch is not None:
            record.update(self._launch(launch, args.get("task")))
        else:
            record.update(self._target(target, args.get("text")))
        schedule = Schedule(record)
        record["nextAt"] = schedule.following(now)
        self.schedules[name] = schedule
        self.save()
        return schedule

    def _launch(self, launch, task):
        if not isinstance(launch, dict):
            raise bad_request("launch must be a DispatchArgs object")
        if task is not None and (not isinstance(task, str) or not task.strip()):
            raise bad_request("task must be a non-empty string")
        launch = dict(launch)
        trial = dict(launch, task=task) if task else launch
        _, launching, _ = read_dispatch(trial, self.config.current())     # refuses what could not start
        return {"launch": launch, "task": task.strip() if task else None,
                "autoResume": bool(launching.get("resumable"))}

    def _target(self, target, text):
        if not isinstance(target, str) or not target:
            raise bad_request("target must name a session (its id or name)")
        if not isinstance(text, str) or not text.strip():
            raise bad_request("text is required with target: what to tell it")
        if len(text) > TEXT_LIMIT:
            raise RoostError(TOO_LONG, f"text is at most {TEXT_LIMIT} characters")
        job = self.registry.resolve(target)
        return {"target": job.id, "targetName": job.name, "text": text.strip(), "task": None,
                "agent": job.record.get("profile") or "shell", "cwd": job.record.get("cwd") or ""}

    def remove(self, name):
        schedule = self.get(name)
        del self.schedules[schedule.name]
        self.save()
        return schedule

    def pause(self, name, paused):
        """Paused: it keeps its record and runs no more; resumed: from the next slot after
        now (what it missed meanwhile is not run)."""
        schedule = self.get(name)
        schedule.record["paused"] = bool(paused)
        if not paused:
            schedule.record["nextAt"] = schedule.following(self.clock.now_ms())
        self.save()
        return schedule

    def active(self):
        return [schedule for schedule in self.schedules.values() if schedule.active]


def _flag(args, name):
    value = args.get(name)
    if value is not None and not isinstance(value, bool):
        raise bad_request(f"{name} must be true or false")
    return bool(value)
