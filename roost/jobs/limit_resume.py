"""Jobs parked at their usage limit, resumed at the reset (issue 19 item 1).

A row at `waitingFor: "limit"` with a `resetsAt` is parked. A little after its reset
(`limitResumeDelayMs` in roost.json, default RESUME_DELAY_MS) roost types its profile's
`limitResume` text ("continue" for the built-in claude and codex) into it, once: only
while its screen still reads as that limit, never over an attached person's draft, and
verified as submitted (roost.term.typist). The feed says so (a `limit` event) and the
job's timeline keeps the typing. Off for all in roost.json (`"limitResume": false`), per
profile (`"limitResume": null` or false), per job (`roost limits off ID`: the record's
`limitResume: false`).

Once per limit: the record's `limitResumedFor` is the `resetsAt` it was resumed for,
written before anything is typed, so a daemon killed meanwhile does not type it twice.
The timer is one greenlet for every job, woken by the rows' changes (a daemon started
while jobs are parked finds them in their rows), that sleeps until the earliest due
resume: no greenlet per job, and nothing polls.
"""

import logging
import time

import gevent
import gevent.event

from roost.jobs import limits
from roost.jobs.limits import parked
from roost.term.reading import shows_limit

log = logging.getLogger(__name__)

# After the reset, before typing: the provider's clock and this machine's differ by
# seconds, and a reset shown to the minute may come a little after that minute; typed
# at once, the resume could meet the same limit and be spent.
RESUME_DELAY_MS = 30_000
# Longest sleep between two looks: a machine that slept, or a clock that was set, is
# noticed within this even when no row changed.
MAX_SLEEP_S = 300.0
# A screen just taken over (a daemon's restart) is read within its settle time; this is
# how long the resume waits for it to be judged before it gives up on this limit.
JUDGED_WAIT_S = 30.0


def resume_setting(job, config):
    """(the text to type at the reset or None, why there is none)."""
    if config.get("limitResume") is False:
        return None, "limit resumes are off in roost.json"
    if job.protocol:
        return None, "its agent speaks the roost protocol: roost types nothing into it"
    if job.record.get("limitResume") is False:
        return None, "limit resumes are off for this job (roost limits on ID)"
    text = job.launch.get("limitResume")
    if not isinstance(text, str) or not text:
        return None, "its profile names no limitResume text"
    return text, None


def limit_menu(job, reading):
    """The profile's `limitMenu` ({choice, keys}) when `reading` is that dialog: its
    choices hold the one that waits for the reset; else None."""
    menu = job.launch.get("limitMenu")
    if not isinstance(menu, dict) or reading.get("waitingFor") != "dialog":
        return None
    return menu if menu.get("choice") in (reading.get("choices") or ()) else None


class LimitResumer:
    def __init__(self, registry, replies, config, bus, clock):
        """`clock` (roost.clock): when a resume is due is read from it alone."""
        self.registry = registry
        self.clock = clock
        self.replies = replies
        self.config = config
        self.bus = bus
        self._changed = gevent.event.Event()
        self._timer = None
        self._resuming = set()      # job ids being resumed now
        self._picking = set()       # job ids whose limit menu is being answered now

    def start(self):
        self._timer = gevent.spawn(self._run)

    def stop(self):
        if self._timer is not None:
            self._timer.kill(block=False)

    def row_changed(self, after, before):
        """A registry listener: a row that is, or was, at a limit may move the timer; a
        dialog that is the agent's own menu at its limit is answered with its waiting
        choice (`limitMenu`)."""
        if after.get("waitingFor") == "limit" or (before is not None and before.get("waitingFor") == "limit"):
            self._changed.set()
        if after.get("waitingFor") == "dialog" and after["id"] not in self._picking:
            job = self.registry.get(after["id"])
            menu = limit_menu(job, after) if job is not None else None
            if menu is not None and resume_setting(job, self.config)[0] is not None:
                self._picking.add(job.id)
                gevent.spawn(self._pick_waiting, job, menu)

    def _pick_waiting(self, job, menu):
        """Claude Code opens a menu under its limit message ("What do you want to do? 1.
        Stop and wait for limit to reset / 2. Upgrade your plan"), and a session left
        there is never resumed. The choice the profile names is the one that only waits,
        what parking the job does anyway: picked only while that very menu shows, and
        only for a job whose limits roost resumes."""
        try:
            terminal = job.terminal
            if terminal is None:
                return
            still = lambda: limit_menu(job, terminal.reading) == menu     # noqa: E731
            result = self.replies.type_for_roost(job, menu["keys"], "limit-menu", still=still)
            if result.get("submitted"):
                self.bus.publish("limit", f"its usage limit menu answered: {menu['choice']!r}", job.id, job.name)
        except Exception:
            log.exception("job %s: answering its limit menu failed", job.id)
        finally:
            self._picking.discard(job.id)

    def changed(self):
        self._changed.set()

    def delay_ms(self):
        value = self.config.get("limitResumeDelayMs")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            return RESUME_DELAY_MS
        return int(value)

    def state(self, job):
        """(the text typed at its limit's reset or None, why there is none, whether it
        was resumed for this limit already)."""
        text, why_not = resume_setting(job, self.config)
        return text, why_not, job.record.get("limitResumedFor") == job.record.get("resetsAt")

    def due_at(self, job):
        """When the job's resume is due (ms), or None: it is not parked, is resumed
        already for this limit, or has resumes off."""
        row = job.record
        if not parked(row) or not job.speaks:
            return None
        text, _, resumed = self.state(job)
        return None if text is None or resumed else row["resetsAt"] + self.delay_ms()

    def plan(self, job):
        """What roost does at the job's limit's reset, in a sentence; None when it is
        not parked."""
        row = job.record
        if not parked(row) or not job.live:
            return None
        text, why_not, resumed = self.state(job)
        if resumed:
            return "roost resumed it once after this limit's reset already; it does not again."
        if text is None:
            return f"roost does not resume it at the reset: {why_not}."
        at = time.strftime("%H:%M:%S", time.localtime((row["resetsAt"] + self.delay_ms()) / 1000))
        return f"roost types {text!r} into it at {at}, once, if its screen still reads as at its limit then."

    # -- the timer --------------------------------------------------------------------

    def _run(self):
        while True:
            try:
                timeout = self.round(lambda job: gevent.spawn(self._resume, job))
            except Exception:
                log.exception("the limit resumes' timer failed a round; it goes on")
                timeout = MAX_SLEEP_S
            self.clock.wait(self._changed, timeout)
            self._changed.clear()

    def round(self, resume):
        """One look: `resume(job)` for each job whose resume is due now; how long (s)
        until the next one is due, at most MAX_SLEEP_S."""
        earliest = None
        now = self.clock.now_ms()
        for job in self.registry.all():
            at = self.due_at(job)
            if at is None or job.id in self._resuming:
                continue
            if at <= now:
                self._resuming.add(job.id)
                resume(job)
            else:
                earliest = at if earliest is None else min(earliest, at)
        return MAX_SLEEP_S if earliest is None else min(MAX_SLEEP_S, max(0.0, (earliest - now) / 1000))

    def _resume(self, job):
        try:
            self._resume_once(job)
        except Exception:
            log.exception("job %s: resuming it at its limit's reset failed", job.id)
        finally:
            self._resuming.discard(job.id)

    def _resume_once(self, job):
        terminal = job.terminal
        resets_at = job.record.get("resetsAt")
        text, _ = resume_setting(job, self.config)
        if terminal is None or text is None or resets_at is None:
            return
        # A terminal just taken over reads as working until it is first judged.
        terminal.wait_for(lambda: terminal.judged or terminal.closed, JUDGED_WAIT_S)
        if job.terminal is not terminal or not shows_limit(terminal.reading) or job.record.get("resetsAt") != resets_at:
            log.info("job %s: no longer at its limit when its reset came: nothing typed", job.id)
            self.registry.change(job, limitResumedFor=resets_at)
            return
        # Written before typing: a kill between the two never types it twice.
        self.registry.change(job, limitResumedFor=resets_at)
        clock = limits.clock(resets_at)
        result = self.replies.type_for_roost(job, text, "limit-resume", still=lambda: shows_limit(terminal.reading))
        if result.get("submitted"):
            news = f"resumed after its usage limit reset at {clock}: typed {text!r}"
        else:
            news = f"not resumed after its usage limit reset at {clock}: {result.get('error') or 'not submitted'}"
        log.info("job %s: %s", job.id, news)
        self.bus.publish("limit", news, job.id, job.name, resumed=bool(result.get("submitted")),
                         resetsAt=resets_at, typed=text)
