"""What every benchmark shares: waiting with a deadline, and percentiles."""

import time


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
