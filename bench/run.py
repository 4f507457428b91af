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
    chosen = [(name, title) for name, title in SUITES if not names or name in names]
    sections = []
    raw = {}
    for name, title in chosen:
        try:
            module = importlib.import_module(name)
        except ImportError as error:
            sections.append(f"## {title}\n\nnot measured: {error}\n")
            continue
        print(f"bench: {name} ...", file=sys.stderr, flush=True)
        started = time.monotonic()
        figures = module.measure()
        raw[name] = figures
        sections.append(f"## {title}\n\n{module.report(figures)}\n\n"
                        f"(measured in {time.monotonic() - started:.0f} s)\n")
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, cwd=HERE).stdout.strip()
    text = (f"# Benchmark results\n\nWritten by `scripts/bench` on {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"
            f" at commit {commit}.\n\nMachine: {machine()}.\n\n" + "\n".join(sections)
            + "\n<details><summary>raw figures</summary>\n\n```json\n" + json.dumps(raw, indent=1)
            + "\n```\n</details>\n")
    with open(os.path.join(HERE, "RESULTS.md"), "w") as handle:
        handle.write(text)
    print(text)


if __name__ == "__main__":
    main(sys.argv[1:])
