"""Time, in one place: the wall clock in epoch milliseconds (what rows, records and events
carry), the monotonic clock (what durations are measured on), and the timers of the parts
that decide by time (limit resumes, schedules, reminders, reaping, digests, holds).

Those parts are handed a clock (`Clock`, built once in roost.daemon.services) and read
time only from it, so a test hands them a `ManualClock` and moves time instead of
waiting for it. Standard library only: the keeper, the CLI and the hub read `now_ms`
here too; the daemon gives its Clock gevent's timers.
"""

import heapq
import itertools
import time


def now_ms():
    """The wall clock, epoch milliseconds."""
    return int(time.time() * 1000)


def monotonic():
    """Seconds on a clock that never goes back (durations, deadlines)."""
    return time.monotonic()


class Clock:
    """The real clock. `spawn_later(seconds, fn, *args)` starts a timer and returns it
    (gevent.spawn_later in the daemon); a timer's `kill(block=False)` cancels it."""

    def __init__(self, spawn_later):
        self._spawn_later = spawn_later

    def now_ms(self):
        return now_ms()

    def monotonic(self):
        return time.monotonic()

    def call_later(self, seconds, fn, *args):
        """`fn(*args)` in `seconds` (at once when <= 0); the timer, to cancel."""
        return self._spawn_later(max(0.0, seconds), fn, *args)

    def call_at(self, at_ms, fn, *args):
        """`fn(*args)` once the wall clock reads `at_ms`."""
        return self.call_later((at_ms - self.now_ms()) / 1000.0, fn, *args)

    def wait(self, event, seconds):
        """Until `event` is set or `seconds` passed (None: no limit); whether it was set."""
        return event.wait(seconds)

    def sleep(self, seconds):
        time.sleep(seconds)     # gevent's, once the daemon patched it


class ManualTimer:
    __slots__ = ("due", "fn", "args", "cancelled")

    def __init__(self, due, fn, args):
        self.due, self.fn, self.args, self.cancelled = due, fn, args, False

    def kill(self, block=False):
        self.cancelled = True


class ManualClock:
    """A clock that moves only when told (`advance`): the timers that come due on the way
    run in order, each at its own time. For tests and benches of the parts that decide by
    time; `wait` does not block (it records the wait and answers whether the event is
    set), so a loop's round is driven by calling its round."""

    def __init__(self, now_ms=1_800_000_000_000):
        self._now = now_ms
        self._monotonic = 1000.0
        self._timers = []
        self._order = itertools.count()
        self.waits = []             # the `seconds` each wait was asked for

    def now_ms(self):
        return self._now

    def monotonic(self):
        return self._monotonic

    def call_later(self, seconds, fn, *args):
        timer = ManualTimer(self._now + max(0, int(seconds * 1000)), fn, args)
        heapq.heappush(self._timers, (timer.due, next(self._order), timer))
        return timer

    def call_at(self, at_ms, fn, *args):
        return self.call_later((at_ms - self._now) / 1000.0, fn, *args)

    def wait(self, event, seconds):
        self.waits.append(seconds)
        return event.is_set()

    def sleep(self, seconds):
        self.advance(int(seconds * 1000))

    def pending(self):
        """The due times (ms) of the timers not run nor cancelled, soonest first."""
        return sorted(timer.due for _, _, timer in self._timers if not timer.cancelled)

    def advance(self, ms):
        """Moves time on by `ms`, running each timer due on the way at its time."""
        end = self._now + ms
        while self._timers and self._timers[0][0] <= end:
            due, _, timer = heapq.heappop(self._timers)
            if timer.cancelled:
                continue
            self._step_to(due)
            timer.fn(*timer.args)
        self._step_to(end)

    def _step_to(self, at_ms):
        if at_ms > self._now:
            self._monotonic += (at_ms - self._now) / 1000.0
            self._now = at_ms
