"""The trust boundary's cost (issue 16): deciding at accept whether a connection's
process runs inside a job (roost.jobs.origins), with 500 jobs running.

500 real processes stand for the jobs' roots, children of this process, which stands for
the keeper; one of them (`sh`) has a child of its own, the agent's shell tool. Their
pids go into a real JobRegistry. Measured, per connection: a process already seen (the
answer kept per pid and start time), a new process whose parent was seen (a CLI run
from a known shell: two /proc reads), and a cold walk with nothing kept, for a process
inside a job and for this process's parent (outside every job: its whole chain up to init).
The floor is one read of /proc/self/stat.

    .venv/bin/python bench/trust.py          # prints the figures
"""

import os
import signal
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import gevent  # noqa: E402

from roost.clock import Clock  # noqa: E402
from roost.jobs.origins import ProcessOrigins  # noqa: E402
from roost.jobs.record import Job  # noqa: E402
from roost.jobs.registry import JobRegistry  # noqa: E402
from roost.unix.ancestry import read_stat  # noqa: E402
from benchkit import percentile, wait  # noqa: E402

JOBS = 500
ROUNDS = 5
CALLS = 2000
AIM_US = 50


def _timed(fn, prepare=None):
    """Median and p99 (µs) of `fn()` over CALLS calls, best of ROUNDS rounds by median."""
    best = None
    for _ in range(ROUNDS):
        times = []
        for _ in range(CALLS):
            if prepare is not None:
                prepare()
            start = time.perf_counter_ns()
            fn()
            times.append((time.perf_counter_ns() - start) / 1000)
        figures = {"p50_us": percentile(times, 0.5), "p99_us": percentile(times, 0.99)}
        if best is None or figures["p50_us"] < best["p50_us"]:
            best = figures
    return best


def _registry(roots):
    registry = JobRegistry("/nonexistent", None, Clock(gevent.spawn_later))
    for number, process in enumerate(roots):
        job_id = f"j{number}"
        registry.jobs[job_id] = Job({"id": job_id, "name": f"job{number}", "pid": process.pid, "launch": {}})
    registry.runs_moved += 1
    return registry


def measure():
    roots = [subprocess.Popen(["sh", "-c", "sleep 600 & wait"])]
    roots += [subprocess.Popen(["sleep", "600"]) for _ in range(JOBS - 1)]
    tool = None
    try:
        tool = wait(lambda: _child_of(roots[0].pid), 10, "the job's child process")
        registry = _registry(roots)
        me = os.getpid()     # the keeper, as far as the check knows
        outside = os.getppid()
        origins = ProcessOrigins(registry, lambda: me)
        assert origins.place(tool).job.id == "j0"
        assert origins.place(outside) is None

        def forget_tool():
            # A new process whose parent was seen: keep the parent's answer only.
            stat = read_stat(tool)
            origins._known.pop((tool, stat.start), None)

        def forget_all():
            origins._known.clear()

        figures = {
            "jobs": JOBS,
            "floor": _timed(lambda: read_stat(me)),
            "seen": _timed(lambda: origins.place(tool)),
            "parent_seen": _timed(lambda: origins.place(tool), forget_tool),
            "cold_inside": _timed(lambda: origins.place(tool), forget_all),
            "cold_outside": _timed(lambda: origins.place(outside), forget_all),
            "outside_depth": _depth(outside),
            "index_us": _index_cost(registry),
        }
    finally:
        if tool is not None:
            os.kill(tool, signal.SIGKILL)     # sh's child: killing sh would leave it behind
        for process in roots:
            process.kill()
        for process in roots:
            process.wait()
    return figures


def _child_of(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as handle:
            children = handle.read().split()
    except OSError:
        return None
    return int(children[0]) if children else None


def _depth(pid):
    depth = 0
    stat = read_stat(pid)
    while stat is not None and stat.parent > 0:
        depth += 1
        stat = read_stat(stat.parent)
    return depth


def _index_cost(registry):
    """µs to index the 500 jobs' root pids, paid once after any job starts or ends."""
    origins = ProcessOrigins(registry, lambda: None)
    start = time.perf_counter_ns()
    for _ in range(100):
        registry.runs_moved += 1
        origins._job_roots()
    return (time.perf_counter_ns() - start) / 1000 / 100


def report(figures):
    rows = [
        ("one read of /proc/self/stat (the floor)", figures["floor"], ""),
        ("a process seen before (kept per pid and start time)", figures["seen"], f"< {AIM_US} µs"),
        ("a new process whose parent was seen (a CLI run from a job's shell)", figures["parent_seen"],
         f"< {AIM_US} µs"),
        ("nothing kept: a job's process (2 levels under the keeper)", figures["cold_inside"], ""),
        (f"nothing kept: a process outside every job ({figures['outside_depth']} levels up to init)",
         figures["cold_outside"], ""),
    ]
    lines = [f"The check at accept with {figures['jobs']} jobs running.", "",
             "| per connection | median (µs) | p99 (µs) | aim |", "|---|---:|---:|---|"]
    for name, timing, aim in rows:
        lines.append(f"| {name} | {timing['p50_us']:.1f} | {timing['p99_us']:.1f} | {aim} |")
    lines.append("")
    lines.append(f"Indexing the {figures['jobs']} jobs' root pids, once after any job starts or ends: "
                 f"{figures['index_us']:.0f} µs.")
    return "\n".join(lines)


if __name__ == "__main__":
    import json
    result = measure()
    print(report(result))
    print(json.dumps(result, indent=1))
