"""A job's pty: the keeper's own spawn (roost.keeper.spawn.spawn_on_pty, posix_spawn)
against `pexpect.spawn`, from the spawn to `cat`'s first output read off the master.
Why roost does not hold a job's pty with pexpect: besides this figure, pexpect's child
is tied to the process that spawned it (its pty and its wait status belong to that
object), where the keeper hands the master to the daemon over SCM_RIGHTS and reaps as
child subreaper, so a daemon that dies loses nothing. Medians of N spawns each,
interleaved, in a plain process (no gevent).

    .venv/bin/python bench/pty_spawn.py [SPAWNS]
"""

import os
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from roost.keeper.spawn import spawn_on_pty  # noqa: E402


def _keeper(argv):
    started = time.perf_counter()
    pid, master = spawn_on_pty(argv, dict(os.environ), "/tmp", 0o022, 40, 120)
    os.read(master, 100)
    elapsed = (time.perf_counter() - started) * 1000
    os.waitpid(pid, 0)
    os.close(master)
    return elapsed


def _pexpect(argv):
    import pexpect

    started = time.perf_counter()
    child = pexpect.spawn(argv[0], argv[1:], cwd="/tmp", dimensions=(40, 120))
    child.read_nonblocking(100, timeout=10)
    elapsed = (time.perf_counter() - started) * 1000
    child.close(force=True)
    return elapsed


def measure(spawns=100):
    import pexpect  # noqa: F401  (imported once, before the clock runs)

    with tempfile.NamedTemporaryFile("w", suffix=".txt") as sample:
        sample.write("first output\n")
        sample.flush()
        argv = ["cat", sample.name]
        times = {"keeper": [], "pexpect": []}
        for _ in range(spawns):
            times["keeper"].append(_keeper(argv))
            times["pexpect"].append(_pexpect(argv))
    return {name: {"median_ms": round(statistics.median(values), 2),
                   "p90_ms": round(sorted(values)[int(len(values) * 0.9)], 2), "spawns": len(values)}
            for name, values in times.items()}


def report(figures):
    lines = ["| spawn to `cat`'s first output | median | p90 |", "|---|---|---|"]
    for name, label in (("keeper", "the keeper's `spawn_on_pty` (posix_spawn)"), ("pexpect", "`pexpect.spawn`")):
        lines.append(f"| {label} | {figures[name]['median_ms']:.2f} ms | {figures[name]['p90_ms']:.2f} ms |")
    lines += ["", f"{figures['keeper']['spawns']} spawns of each, interleaved, in one plain process."]
    return "\n".join(lines)


if __name__ == "__main__":
    print(report(measure(int(sys.argv[1]) if len(sys.argv) > 1 else 100)))
