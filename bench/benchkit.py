"""What every benchmark shares: waiting with a deadline, percentiles, and the checkout
whose daemon is measured."""

import os
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def code_root():
    """The checkout whose roost a bench's daemon runs: this one, or the one `run.py
    --beside REV` measures beside it (ROOST_BENCH_CODE). The bench's own client code is
    always this checkout's."""
    return os.environ.get("ROOST_BENCH_CODE") or ROOT


def daemon_env(**extra):
    """The environment of a bench's daemon: `python -m roost` from code_root()."""
    env = {**os.environ, "PYTHONPATH": code_root(), **extra}
    env.pop("ROOST_SOCKET", None)
    return env


def wait(predicate, timeout, what, interval=0.02):
    """Poll `predicate` until it returns a true value; RuntimeError after `timeout` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(interval)


def percentile(values, fraction):
    """The value at `fraction` (0-1) of the sorted values (nearest rank)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))]
