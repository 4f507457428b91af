"""Schedules: 1000 held by one daemon (what adding them takes, the daemon's idle CPU
with them all armed), and how late a due run starts.

The lateness is measured on DUE runs spread over a few seconds, among the 1000 held: the
daemon is stopped, their `nextAt` set a few seconds after its next start (as if their
time came then), and it is started again. Each run's lateness is from its slot to the
start of its job (its row's `startedAt`) and to its `schedule` event (the job running,
the run recorded).

    .venv/bin/python bench/schedules.py          # prints the figures
"""

import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from benchkit import percentile, wait  # noqa: E402
from jobs import Daemon, cpu_seconds  # noqa: E402

HELD = 1000
DUE = 60
DUE_SPREAD_MS = 6000
DUE_AFTER_START_MS = 4000
IDLE_SECONDS = 10.0
AIM_P99_MS = 1000.0


def launch():
    return {"kind": "shell", "cwd": "/tmp", "command": ["true"], "env": {}, "name": "", "sessionFile": "",
            "origin": "dispatch"}


def hold(daemon):
    started = time.monotonic()
    for number in range(HELD):
        # Clock times all over the day: none comes due while the bench runs but the chosen ones.
        minute = (number * 7) % (24 * 60)
        daemon.call("schedule-add", name=f"s{number}", when=f"daily {minute // 60:02d}:{minute % 60:02d}",
                    launch=launch())
    return (time.monotonic() - started) * 1000 / HELD


def idle_cpu(daemon):
    daemon.call("list")
    time.sleep(1.0)
    before = cpu_seconds(daemon.process.pid)
    time.sleep(IDLE_SECONDS)
    return 100 * (cpu_seconds(daemon.process.pid) - before) / IDLE_SECONDS


def restart_with_due(daemon):
    """Stopped, DUE of the schedules made due just after the next start, started again:
    {name: due}."""
    daemon.call("shutdown")
    daemon.process.wait(60)
    path = os.path.join(daemon.home, "schedules.json")
    with open(path) as handle:
        data = json.load(handle)
    first = int(time.time() * 1000) + DUE_AFTER_START_MS
    due = {}
    for index, record in enumerate(data["schedules"][:DUE]):
        record["nextAt"] = due[record["name"]] = first + index * DUE_SPREAD_MS // DUE
    with open(path, "w") as handle:
        json.dump(data, handle)
    daemon.process = subprocess.Popen([sys.executable, "-m", "roost", "daemon", "--foreground"], env=daemon.env,
                                      stdout=daemon.log, stderr=subprocess.STDOUT, start_new_session=True)
    daemon.client = wait(daemon._connect, 15, "the daemon again")
    if int(time.time() * 1000) >= first:
        raise RuntimeError("the daemon took longer to start than the bench leaves it: the first runs were missed")
    return due


def lateness(daemon, due):
    def ran():
        events = [event for event in daemon.call("events", limit=1000)["events"]
                  if event["kind"] == "schedule" and event.get("due")]
        return events if len(events) >= len(due) else None
    events = wait(ran, 60, "every due run")
    rows = {row["id"]: row for row in daemon.call("list", all=True)["jobs"]}
    skipped = [event for event in events if event.get("skipped")]
    if skipped:
        raise RuntimeError(f"runs were skipped: {skipped[:3]}")
    to_start = [rows[event["id"]]["startedAt"] - event["due"] for event in events]
    to_event = [event["at"] - event["due"] for event in events]
    return to_start, to_event


def measure():
    daemon = Daemon()
    try:
        add_ms = hold(daemon)
        cpu = idle_cpu(daemon)
        size = os.path.getsize(os.path.join(daemon.home, "schedules.json"))
        to_start, to_event = lateness(daemon, restart_with_due(daemon))
        cpu_after = idle_cpu(daemon)
    finally:
        daemon.close()
    return {
        "held": HELD, "due": DUE, "add_ms_each": round(add_ms, 1), "file_kib": round(size / 1024),
        "idle_cpu_percent": round(cpu, 2), "idle_cpu_after_runs_percent": round(cpu_after, 2),
        "late_to_start_ms": {"p50": percentile(to_start, 0.5), "p99": percentile(to_start, 0.99),
                             "max": max(to_start)},
        "late_to_event_ms": {"p50": percentile(to_event, 0.5), "p99": percentile(to_event, 0.99),
                             "max": max(to_event)},
    }


def report(figures):
    start, event = figures["late_to_start_ms"], figures["late_to_event_ms"]
    met = "met" if start["p99"] < AIM_P99_MS else "not met"
    return "\n".join([
        "| measure | roost | aim |",
        "|---|---|---|",
        f"| `schedule-add`, each, up to {figures['held']} held (schedules.json written each time) "
        f"| {figures['add_ms_each']} ms ({figures['file_kib']} KiB at the end) | |",
        f"| daemon idle CPU over {IDLE_SECONDS:.0f} s with {figures['held']} schedules armed "
        f"| {figures['idle_cpu_percent']} % | near 0 |",
        f"| the same after {figures['due']} runs | {figures['idle_cpu_after_runs_percent']} % | near 0 |",
        f"| a due run's lateness, slot to its job's start, p50 / p99 / max ({figures['due']} runs over "
        f"{DUE_SPREAD_MS // 1000} s) | {start['p50']} / {start['p99']} / {start['max']} ms | p99 under 1 s: {met} |",
        f"| slot to its `schedule` event (the job running, the run kept) | "
        f"{event['p50']} / {event['p99']} / {event['max']} ms | |",
    ])


if __name__ == "__main__":
    figures = measure()
    print(json.dumps(figures, indent=1))
    print(report(figures))
