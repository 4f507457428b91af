"""CLI start-up: how long `roost ping` (and a Tab's `roost __complete`) takes from a checkout and from the downloaded
binary, against the interpreter's own floor (`python3 -c pass`), all in the same run and
against the same live daemon. Medians of N runs each.

    .venv/bin/python bench/startup.py [RUNS]     # prints the figures and the ratios

`measure()` returns the figures as a dict and `report(figures)` as markdown, for
bench/run.py. dist/roost is built first (scripts/build), so it is the checkout's.
"""

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BINARY = os.path.join(ROOT, "dist", "roost")
AIMS_MS = {"source_ping": 35.0, "binary_ping": 100.0}


def _time_runs(argv, env, runs):
    """Wall time of each run, in ms, from fork to exit (output discarded)."""
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        done = subprocess.run(argv, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        times.append((time.perf_counter() - started) * 1000)
        if done.returncode != 0:
            raise RuntimeError(f"{argv} failed ({done.returncode}): {done.stderr.decode()[-2000:]}")
    return times


def _summary(times):
    ordered = sorted(times)
    return {"median_ms": round(statistics.median(ordered), 2),
            "p90_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.9))], 2),
            "min_ms": round(ordered[0], 2), "runs": len(ordered)}


def _start_daemon(env):
    process = subprocess.Popen([sys.executable, "-m", "roost", "daemon", "--foreground"], env=env, cwd=ROOT,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    socket_path = os.path.join(env["ROOST_HOME"], "roost.sock")
    deadline = time.monotonic() + 15
    while not os.path.exists(socket_path):
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise RuntimeError("the daemon did not start")
        time.sleep(0.01)
    return process


def _import_breakdown(env, top=8):
    """`python -X importtime -m roost ping`: the top-level imports that cost most."""
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "roost", "ping"], env=env, cwd=ROOT,
                          capture_output=True, text=True)
    rows = []
    for line in done.stderr.splitlines():
        fields = line.split("|")
        if not line.startswith("import time:") or len(fields) != 3 or not fields[1].strip().isdigit():
            continue
        name = fields[2][1:]
        if not name.startswith(" "):   # nested imports are indented; their parents include them
            rows.append((int(fields[1]) / 1000, name))
    return {"total_ms": round(sum(ms for ms, _ in rows), 1),
            "top": [[name, round(ms, 1)] for ms, name in sorted(rows, reverse=True)[:top]]}


def measure(runs=30, build=True):
    if build or not os.path.exists(BINARY):
        # The binary measured is the checkout's (scripts/build is quick when nothing changed).
        subprocess.run([os.path.join(ROOT, "scripts", "build")], cwd=ROOT, check=True)
    scratch = tempfile.mkdtemp(prefix="rb-", dir="/tmp")
    # A copy, as downloaded: a build meanwhile cannot swap the file under the runs.
    binary = os.path.join(scratch, "roost")
    shutil.copy2(BINARY, binary)
    env = {name: value for name, value in os.environ.items() if not name.startswith(("ROOST_", "PI_"))}
    # As a user runs it: Python keeps compiled modules (a checkout gets its __pycache__).
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.update(ROOST_HOME=os.path.join(scratch, "h"), XDG_CACHE_HOME=os.path.join(scratch, "cache"))
    daemon = _start_daemon(env)
    try:
        cases = {
            "floor": [sys.executable, "-c", "pass"],
            "source_version": [sys.executable, "-m", "roost", "--version"],
            "source_ping": [sys.executable, "-m", "roost", "ping"],
            "binary_version": [binary, "--version"],
            "binary_ping": [binary, "ping"],
            # a Tab after `roost stop `: the job ids and names, asked of the daemon
            "binary_complete": [binary, "__complete", "stop", ""],
        }
        first = []
        for attempt in range(3):
            cache = os.path.join(scratch, f"first-{attempt}")
            first += _time_runs([binary, "--version"], {**env, "XDG_CACHE_HOME": cache}, 1)
        _time_runs([binary, "--version"], env, 1)   # unpacks into this run's cache
        unpacked = [os.path.join(env["XDG_CACHE_HOME"], "roost", name, "roost")
                    for name in os.listdir(os.path.join(env["XDG_CACHE_HOME"], "roost"))][0]
        cases["unpacked_ping"] = [unpacked, "ping"]
        for argv in cases.values():
            _time_runs(argv, env, 2)   # warm the page cache
        # Interleaved rounds, so that a change in the machine's load falls on every case.
        times = {name: [] for name in cases}
        for _ in range(runs):
            for name, argv in cases.items():
                times[name] += _time_runs(argv, env, 1)
        figures = {name: _summary(values) for name, values in times.items()}
        figures["binary_first_run"] = _summary(first)
        figures["floor"]["interpreter"] = sys.executable
        floor = figures["floor"]["median_ms"]
        for name, figure in figures.items():
            if name != "floor":
                figure["ratio_to_floor"] = round(figure["median_ms"] / floor, 2)
        for name, aim in AIMS_MS.items():
            figures[name]["aim_ms"] = aim
            figures[name]["meets_aim"] = figures[name]["median_ms"] <= aim
        figures["launcher_overhead_ms"] = round(figures["binary_ping"]["median_ms"]
                                                - figures["unpacked_ping"]["median_ms"], 2)
        figures["source_ping_imports"] = _import_breakdown(env)
        figures["binary_bytes"] = os.path.getsize(binary)
        figures["unpacked_bytes"] = sum(os.path.getsize(os.path.join(directory, name))
                                        for directory, _, names in os.walk(os.path.dirname(unpacked))
                                        for name in names)
        return figures
    finally:
        daemon.terminate()
        try:
            daemon.wait(10)
        except subprocess.TimeoutExpired:
            daemon.kill()
        shutil.rmtree(scratch, ignore_errors=True)


LABELS = [
    ("floor", "`python3 -c pass` (the floor)"),
    ("source_version", "`python -m roost --version`"),
    ("source_ping", "`python -m roost ping`"),
    ("binary_version", "`dist/roost --version`"),
    ("binary_ping", "`dist/roost ping` (second run onwards)"),
    ("binary_complete", "`dist/roost __complete stop ''` (a Tab: job ids from the daemon)"),
    ("unpacked_ping", "the unpacked program's `roost ping` (no launcher)"),
    ("binary_first_run", "`dist/roost --version`, first run (unpacks)"),
]


def report(figures):
    lines = ["| command | median | p90 | × floor | aim |", "|---|---|---|---|---|"]
    for name, label in LABELS:
        figure = figures[name]
        aim = ""
        if "aim_ms" in figure:
            aim = f"{figure['aim_ms']:.0f} ms: {'met' if figure['meets_aim'] else 'MISSED'}"
        ratio = f"{figure['ratio_to_floor']:.2f}" if "ratio_to_floor" in figure else "1.00"
        lines.append(f"| {label} | {figure['median_ms']:.1f} ms | {figure['p90_ms']:.1f} ms | {ratio} | {aim} |")
    imports = figures["source_ping_imports"]
    lines += [
        "",
        f"Floor interpreter: `{figures['floor']['interpreter']}`; medians of {figures['floor']['runs']} runs "
        f"against one live daemon. The launcher (a `sh` script that finds the unpacked copy and execs it) "
        f"adds {figures['launcher_overhead_ms']:.1f} ms. dist/roost is "
        f"{figures['binary_bytes'] / 2**20:.1f} MiB, {figures['unpacked_bytes'] / 2**20:.1f} MiB unpacked.",
        "",
        f"Where `python -m roost ping` spends its imports ({imports['total_ms']:.1f} ms in all, "
        "`-X importtime`, cumulative): " + ", ".join(f"{name} {ms:.1f} ms" for name, ms in imports["top"]) + ".",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.path.insert(0, ROOT)
    print(report(measure(int(sys.argv[1]) if len(sys.argv) > 1 else 30)))
