"""The one timer of every schedule (M39, M40): a single greenlet that sleeps until the
earliest `nextAt`, is woken when a schedule changes, and runs what is due. No greenlet
per schedule, and nothing polls.

A run starts the schedule's launch (its job's row says `schedule: NAME`) or, for a target
schedule, types its text to the session as a reply from roost. It is skipped, and the
skip kept as `lastSkip {at, why}`, when the last run still goes, the launch is refused,
or the target is gone or does not wait. Each run and each skip is a `schedule` event.
A launch of a profile whose provider's usage limit has a known reset to come (a parked
job of that provider, roost.jobs.limits) is skipped, "the <provider> usage limit resets
at HH:MM", and runs once at that reset (`afterLimitAt`), its clock unchanged. So is one that
roost.spend.admission does not admit (issue 29): a budget it would break (skipped, its
lastSkip says which), a plan window used past `admitBelowPercent` (run at its reset),
`maxLive` sessions of its provider running (queued: `queuedAt`, run in order once a
session of that provider ends or parks).

A slot found more than a minute late was missed (roost was not running, or the machine
slept): it runs once when the schedule says `catchUp`, however many slots were missed,
and is skipped otherwise. At the daemon's start a run of a resumable profile cut short
by the restart carries on with its resume argv (autoResume).
"""

import logging
import time

import gevent
import gevent.event

from roost.errors import BUSY, NOT_FOUND, RoostError
from roost.jobs import limits
from roost.jobs.adoption import ENDED_AWAY

log = logging.getLogger(__name__)

# Longest sleep between two looks at the wall clock: a machine that slept, or a clock
# that was set, is noticed within this even when no schedule changed.
MAX_SLEEP_S = 300.0
# A slot this late was missed, not just run late.
MISSED_AFTER_MS = 60_000


class Skipped(Exception):
    def __init__(self, code, why):
        super().__init__(why)
        self.code = code
        self.why = why


class Scheduler:
    def __init__(self, book, registry, runner, launcher, replies, bus, clock, admission):
        """`clock` (roost.clock): what is due is read from it alone."""
        self.book = book
        self.clock = clock
        self.admission = admission     # roost.spend.admission: budgets, plan windows, maxLive
        self.registry = registry
        self.runner = runner
        self.launcher = launcher
        self.replies = replies
        self.bus = bus
        self._changed = gevent.event.Event()
        self._timer = None

    def start(self):
        """After the jobs are adopted: the missed slots settled, cut-short runs resumed,
        the timer started."""
        self.book.load()
        self._resume_cut_short()
        self._timer = gevent.spawn(self._run)

    def stop(self):
        if self._timer is not None:
            self._timer.kill(block=False)

    def changed(self):
        """A schedule was added, removed, paused or resumed: the timer looks again."""
        self._changed.set()

    # -- the timer ------------------------------------------------------------------

    def _run(self):
        while True:
            try:
                timeout = self.round()
            except Exception:
                log.exception("the schedules' timer failed a round; it goes on")
                timeout = MAX_SLEEP_S
            self.clock.wait(self._changed, timeout)
            self._changed.clear()

    def round(self):
        """One look: what is due now runs (or is skipped); how long (s) until the next
        slot, at most MAX_SLEEP_S."""
        self._run_due()
        self._run_after_limits()
        self._run_queued()
        earliest = min((at for schedule in self.book.active()
                        for at in (schedule.next_at, schedule.record.get("afterLimitAt")) if at is not None),
                       default=None)
        return MAX_SLEEP_S if earliest is None else \
            min(MAX_SLEEP_S, max(0.0, (earliest - self.clock.now_ms()) / 1000.0))

    def _run_due(self):
        now = self.clock.now_ms()
        due = sorted((schedule for schedule in self.book.active() if schedule.next_at <= now),
                     key=lambda schedule: schedule.next_at)
        for schedule in due:
            try:
                if now - schedule.next_at > MISSED_AFTER_MS and not schedule.record.get("catchUp"):
                    self._skip(schedule, "missed: roost was not running (or the machine slept) at "
                                         + time.strftime("%Y-%m-%d %H:%M", time.localtime(schedule.next_at / 1000)),
                               schedule.next_at)
                else:
                    self._fire(schedule, due=schedule.next_at)
            except Skipped:
                pass
            except Exception:
                log.exception("schedule %s failed to run", schedule.name)
            # The next slot after now: slots missed meanwhile are not run one by one.
            schedule.record["nextAt"] = schedule.following(max(now, self.clock.now_ms()))
        if due:
            self.book.save()

    def _run_after_limits(self):
        """The runs a usage limit put off, once its reset came."""
        now = self.clock.now_ms()
        due = [schedule for schedule in self.book.active() if (schedule.record.get("afterLimitAt") or now + 1) <= now]
        for schedule in due:
            at = schedule.record.pop("afterLimitAt")
            try:
                self._fire(schedule, due=at)
            except Skipped:
                pass
            except Exception:
                log.exception("schedule %s failed to run after its limit's reset", schedule.name)
        if due:
            self.book.save()

    def _run_queued(self):
        """The runs `maxLive` queued, in the order they came, once their turn and a slot
        came (roost.spend.admission tells the timer when a session ends or parks)."""
        queued = sorted((schedule for schedule in self.book.active() if schedule.record.get("queuedAt")),
                        key=lambda schedule: schedule.record["queuedAt"])
        self.admission.prune("schedule:", {_key(schedule) for schedule in queued})
        ran = False
        for schedule in queued:
            if self.admission.check(self._launch_args(schedule), key=_key(schedule)) is not None:
                continue
            ran = True
            try:
                self._fire(schedule, due=schedule.record.get("queuedFor"))
            except Skipped:
                pass
            except Exception:
                log.exception("schedule %s failed to run from the queue", schedule.name)
        if ran:
            self.book.save()

    # -- a run ----------------------------------------------------------------------

    def run_now(self, name):
        """`schedule-run`: one run now, its clock unchanged; {name, id}. A skip is
        refused with its reason (and kept as lastSkip)."""
        schedule = self.book.get(name)
        try:
            job_id = self._fire(schedule)
        except Skipped as skip:
            self.book.save()
            raise RoostError(skip.code, skip.why) from None
        self.book.save()
        return {"name": schedule.name, "id": job_id}

    def _fire(self, schedule, due=None):
        """One run of `schedule` (its record changed, not yet saved): the job's id, or
        Skipped. `due`: the slot it runs for (its event says so; none for a run by hand)."""
        record = schedule.record
        try:
            if record.get("target"):
                job = self._tell(schedule, due)
            else:
                job = self._launch(schedule, due)
        except Skipped as skip:
            self._skip(schedule, skip.why, due)
            raise
        record["lastRunAt"] = self.clock.now_ms()
        record["lastJob"] = job.id
        return job.id

    def _skip(self, schedule, why, due):
        schedule.record["lastSkip"] = {"at": self.clock.now_ms(), "why": why}
        self.bus.publish("schedule", f"{schedule.name} skipped: {why}", schedule=schedule.name, skipped=why, due=due)

    def _launch(self, schedule, due):
        record = schedule.record
        last = self.registry.get(record.get("lastJob"))
        if last is not None and (last.run.active or last.running):
            raise Skipped(BUSY, f"its last run {last.name} ({last.id}) still goes")
        args = self._launch_args(schedule)
        limit = limits.known_limit(self.launcher, args, self.clock.now_ms())
        if limit is not None:
            provider, reset = limit
            if due is not None:
                record["afterLimitAt"] = reset      # a run of its clock: then, once (_run_after_limits)
            raise Skipped(BUSY, f"the {provider} usage limit resets at {limits.clock(reset)}")
        verdict = self.admission.check(args, key=_key(schedule))
        if verdict is not None:
            if verdict.kind == "wait" and due is not None:
                record["afterLimitAt"] = verdict.resets_at     # then, once (_run_after_limits)
            elif verdict.kind == "queue" and not record.get("queuedAt"):
                record["queuedAt"], record["queuedFor"] = self.clock.now_ms(), due
            raise Skipped(BUSY, verdict.why)
        record.pop("queuedAt", None)
        record.pop("queuedFor", None)
        try:
            started = self.launcher.launch(args, extra={"schedule": schedule.name})
        except RoostError as error:
            raise Skipped(error.code, f"the launch was refused: {error.text}") from None
        job = self.registry.get(started["id"])
        self.bus.publish("schedule", f"{schedule.name} started {job.name}", job.id, job.name,
                         schedule=schedule.name, due=due)
        return job

    def _launch_args(self, schedule):
        args = dict(schedule.record["launch"])
        if schedule.record.get("task"):
            args["task"] = schedule.record["task"]
        if not args.get("name"):
            args["name"] = schedule.name
        return args

    def _tell(self, schedule, due):
        record = schedule.record
        job = self.registry.get(record["target"])
        if job is None:
            raise Skipped(NOT_FOUND, f"its target {record.get('targetName')} ({record['target']}) is gone")
        reading = job.terminal.reading if job.terminal is not None else {}
        waits = job.running and job.record.get("status") == "waiting"
        if job.running and job.record.get("waitingFor") == "limit":
            resets_at = job.record.get("resetsAt")
            raise Skipped(BUSY, f"its target {job.name} is at its usage limit"
                                  + (f" (it resets at {limits.clock(resets_at)})" if resets_at else ""))
        if not waits or job.record.get("waitingFor") == "dialog" or reading.get("dialog"):
            raise Skipped(BUSY, f"its target {job.name} does not wait for text")
        self.replies.queue(job, record["text"])
        self.bus.publish("schedule", f"{schedule.name} told {job.name}: {record['text']}", job.id, job.name,
                         schedule=schedule.name, due=due, who="roost", who_id=None)
        return job

    # -- autoResume -------------------------------------------------------------------

    def _resume_cut_short(self):
        """M40: a schedule's last run of a resumable profile that a restart of the machine
        (or of roost and its keeper) ended carries on with its resume argv."""
        for schedule in self.book.schedules.values():
            if not schedule.record.get("autoResume"):
                continue
            job = self.registry.get(schedule.record.get("lastJob"))
            if job is None or job.run.active or job.record.get("error") != ENDED_AWAY:
                continue
            if not job.launch.get("resumeCommand"):
                continue
            try:
                self.runner.wake(job)
            except RoostError as error:
                log.warning("schedule %s: its run %s cannot resume: %s", schedule.name, job.id, error.text)
                continue
            self.bus.publish("schedule", f"{schedule.name} resumed {job.name}, cut short by a restart",
                             job.id, job.name, schedule=schedule.name)


def _key(schedule):
    """A schedule's place in admission's queues."""
    return f"schedule:{schedule.name}"
