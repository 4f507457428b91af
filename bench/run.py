"""Run every benchmark and write bench/RESULTS.md with the machine the figures came from.

    scripts/bench            # or: .venv/bin/python bench/run.py [wire startup jobs ...]

Each bench module has `measure() -> dict` and `report(figures) -> markdown`; the floor
each compares against is measured in the same run."""

import importlib
import json
import os
import platform
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

SUITES = [
    ("wire", "The wire: ping over the socket"),
    ("startup", "CLI start-up"),
    ("jobs", "Jobs: idle cost, spawn, ping under load"),
    ("terminal", "A job's terminal: throughput and loop pauses"),
    ("replies", "Replies: `roost reply` to the agent's on_reply"),
    ("events", "The feed and the peers: pushes to 1000 subscribers, `send` to 500 agents"),
    ("git", "Git for the task board: worktree add and land against plain git"),
    ("board", "The task board: `task list` of 200, `prepare` and `merge` against plain git"),
]


def machine():
    cpu = "unknown"
    try:
        with open("/proc/cpuinfo") as handle:
            for line in handle:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return (f"{platform.system()} {platform.release()}, {platform.machine()}, {os.cpu_count()} cores "
            f"({cpu}), {mem:.0f} GiB, Python {platform.python_version()}")


def main(names):
    """Measure the named suites (all by default); the others keep their last figures,
    so RESULTS.md always holds every suite, each with when and where it was measured."""
    stored_path = os.path.join(HERE, "results.json")
    try:
        with open(stored_path) as handle:
            stored = json.load(handle)
    except (OSError, ValueError):
        stored = {}
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, cwd=HERE).stdout.strip()
    for name, _ in SUITES:
        if names and name not in names:
            continue
        module = importlib.import_module(name)
        print(f"bench: {name} ...", file=sys.stderr, flush=True)
        started = time.monotonic()
        figures = module.measure()
        stored[name] = {"figures": figures, "seconds": round(time.monotonic() - started),
                        "at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                        "commit": commit, "machine": machine()}
        with open(stored_path, "w") as handle:
            json.dump(stored, handle, indent=1)
    sections = []
    for name, title in SUITES:
        entry = stored.get(name)
        if entry is None:
            sections.append(f"## {title}\n\nnot measured yet: `scripts/bench {name}`\n")
            continue
        module = importlib.import_module(name)
        sections.append(f"## {title}\n\n{module.report(entry['figures'])}\n\n"
                        f"(measured {entry['at']} at commit {entry['commit']} in {entry['seconds']} s"
                        f" on: {entry['machine']})\n")
    text = ("# Benchmark results\n\nWritten by `scripts/bench` (`scripts/bench SUITE...` measures only "
            "those; the others keep their last figures). Each compares against a floor measured in "
            "the same run. The raw figures are in `bench/results.json`.\n\n" + "\n".join(sections))
    with open(os.path.join(HERE, "RESULTS.md"), "w") as handle:
        handle.write(text)
    print(text)


if __name__ == "__main__":
    main(sys.argv[1:])
