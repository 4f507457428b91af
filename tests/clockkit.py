"""A real daemon whose clock the test moves, for what waits on time (a usage limit's reset,
a schedule's slot, a start put off to a reset): roost.clock's time there is the real one
moved on by the milliseconds in `clock/skew-ms` beside the home, which `advance` raises. Its
parts that decide by time read only that clock (roost.clock, the house rule in
tests/test_source.py), so nothing is waited for but the daemon's next look: the daemon's
waits and timers look again every 50 ms here. A fake agent started with `agent_env`
shares the clock (tests/agents/limit_tui.py): its jail reads the clock's folder
(`agent_sandbox`; the home is hidden from jails, and a file bound alone would stay the
one replaced at the first move)."""

import os
import time

import pytest

from conftest import DaemonProcess, serving
from jobkit import RUN_DAEMON

SKEW_DIR, SKEW_FILE = "clock", "skew-ms"

# Run first in the daemon's process, before roost's modules take roost.clock.now_ms.
MOVABLE_CLOCK = '''
import os, sys, time
import gevent
import roost.clock as clock

_skew_path = os.path.join(os.path.dirname(os.environ["ROOST_HOME"]), "clock", "skew-ms")
LOOK_S = 0.05


def _skew():
    try:
        with open(_skew_path, encoding="utf-8") as handle:
            return int(handle.read() or 0)
    except (OSError, ValueError):
        return 0


def _now_ms():
    return int(time.time() * 1000) + _skew()


def _wait(self, event, seconds):
    # The clock may be moved meanwhile: look again every LOOK_S whatever the wait.
    return event.wait(LOOK_S if seconds is None else min(seconds, LOOK_S))


def _call_at(self, at_ms, fn, *args):
    def when_due():
        while _now_ms() < at_ms:
            gevent.sleep(LOOK_S)
        fn(*args)
    return gevent.spawn(when_due)


def _call_later(self, seconds, fn, *args):
    return _call_at(self, _now_ms() + int(max(0.0, seconds) * 1000), fn, *args)


def _monotonic(self):
    return time.monotonic() + _skew() / 1000


def _sleep(self, seconds):
    # Until the clock, moved or not, says `seconds` passed.
    end = _monotonic(self) + seconds
    while _monotonic(self) < end:
        gevent.sleep(min(LOOK_S, max(0.0, end - _monotonic(self))))


clock.now_ms = _now_ms
clock.Clock.monotonic = _monotonic
clock.Clock.sleep = _sleep
clock.Clock.wait = _wait
clock.Clock.call_at = _call_at
clock.Clock.call_later = _call_later
'''


class MovableClockDaemon(DaemonProcess):
    code = MOVABLE_CLOCK + RUN_DAEMON


@pytest.fixture
def clocked_daemon(home):
    """conftest's `daemon`, on a clock the test moves."""
    yield from serving(MovableClockDaemon(home))


def skew_path(daemon):
    return os.path.join(os.path.dirname(daemon.home), SKEW_DIR, SKEW_FILE)


def skew(daemon):
    try:
        with open(skew_path(daemon), encoding="utf-8") as handle:
            return int(handle.read() or 0)
    except FileNotFoundError:
        return 0


def now_ms(daemon):
    """The daemon's clock now."""
    return int(time.time() * 1000) + skew(daemon)


def advance(daemon, ms):
    """Moves the daemon's clock (and its agents') on by `ms`."""
    os.makedirs(os.path.dirname(skew_path(daemon)), exist_ok=True)
    with open(skew_path(daemon) + ".tmp", "w", encoding="utf-8") as handle:
        handle.write(str(skew(daemon) + int(ms)))
    os.replace(skew_path(daemon) + ".tmp", skew_path(daemon))


def advance_to(daemon, at_ms):
    """Moves the daemon's clock on to `at_ms` (not back)."""
    advance(daemon, max(0, at_ms - now_ms(daemon)))


def agent_env(daemon):
    """The environment of a fake agent that keeps the daemon's time."""
    return {"LIMIT_SKEW_FILE": skew_path(daemon)}


def agent_sandbox(daemon):
    """roost.json's `sandbox` that lets a jailed fake agent read the daemon's time."""
    os.makedirs(os.path.dirname(skew_path(daemon)), exist_ok=True)
    return {"read": [os.path.dirname(skew_path(daemon))]}
