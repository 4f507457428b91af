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


def machine_stalls(seconds=3.0):
    """The machine's own stalls, in the same run: a unit of plain Python work (about
    0.2 ms) done over and over at a low duty (a 1.5 ms sleep after each), each timed.
    On a shared host some units take many times their usual time though nothing else
    of ours runs (the host holds the CPU back): a path a few milliseconds long meets
    such a stall now and then, and no program on the machine goes below it. Returns the
    usual unit (median), the share of units that took over 5x it, and the longest."""

    def unit():
        total = 0
        for number in range(3000):
            total += number * number
        return total

    times = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        started = time.perf_counter()
        unit()
        times.append(time.perf_counter() - started)
        time.sleep(0.0015)
    usual = percentile(times, 0.5)
    slowed = sum(1 for one in times if one > 5 * usual)
    return {"unit_ms": round(usual * 1000, 3), "units": len(times),
            "slowed_percent": round(slowed * 100 / len(times), 2), "worst_ms": round(max(times) * 1000, 2)}


def stalls_row(stalls, columns=1):
    """A table row for `machine_stalls`' figures; `columns`: the figure cells after the
    first (filled with the text, then left empty)."""
    if not stalls:
        return []
    text = (f"{stalls['slowed_percent']}% of {stalls['unit_ms']} ms units over 5x; "
            f"the longest {stalls['worst_ms']} ms")
    return [f"| floor: the machine's own stalls (plain Python work at a 15% duty, nothing else of ours "
            f"running) | {text} |" + " |" * (columns - 1)]
