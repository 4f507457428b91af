"""Unread answers (issue 26 item 5): the daemon's memory while one job's eight connections
ask for `list` (100 jobs: a list of some tens of KiB) and never read, and after they close.
Each connection asks for up to 16 MiB of answers (the spec's limit for one connection):
before the budgets they could make the daemon hold 8 x 16 MiB; with them, the job's
connections share a few MiB (roost/server/unread.py). The floor is the daemon's memory
before the flood.

    .venv/bin/python bench/unread.py          # prints the figures
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

from benchkit import code_root, daemon_env, wait  # noqa: E402
from roost.client.connection import Client  # noqa: E402

JOBS = 100
CONNECTIONS = 8
EACH = 16 * 1024 * 1024
FLOOD = os.path.join(ROOT, "tests", "agents", "unread_flood.py")


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as handle:
        return int(handle.read().split("VmRSS:")[1].split()[0])


def measure():
    base = tempfile.mkdtemp(prefix="rb-unread-", dir="/tmp")
    home = os.path.join(base, "h")
    socket = os.path.join(home, "roost.sock")
    env = daemon_env(ROOST_HOME=home)
    log = open(os.path.join(base, "daemon.err"), "wb")
    daemon = subprocess.Popen([sys.executable, "-m", "roost", "daemon", "--foreground"], env=env, stdout=log,
                              stderr=subprocess.STDOUT, start_new_session=True, cwd=code_root())
    try:
        wait(lambda: os.path.exists(socket), 30, "the daemon")
        with Client.connect(socket, timeout=30) as client:
            for number in range(JOBS):
                client.call("dispatch", {"kind": "shell", "cwd": "/tmp", "command": ["sleep", "600"], "env": {},
                                         "name": f"sleeper-{number}", "sessionFile": "", "origin": "dispatch"})
            time.sleep(2.0)     # the jobs started and settled before the first reading
            before = rss_kib(daemon.pid)
            flood = client.call("dispatch", {"kind": "shell", "cwd": "/tmp", "name": "flood", "env": {},
                                             "command": [sys.executable, FLOOD, str(CONNECTIONS), str(EACH)],
                                             "sessionFile": "", "origin": "dispatch"})["id"]
            peak = [before]
            done = threading.Event()

            def sample():
                while not done.is_set():
                    peak[0] = max(peak[0], rss_kib(daemon.pid))
                    time.sleep(0.02)

            sampler = threading.Thread(target=sample)
            sampler.start()

            def ended():
                rows = client.call("list", {"all": True})["jobs"]
                return any(row["id"] == flood and row["state"] in ("done", "failed") for row in rows)

            wait(ended, 300, "the flood to end")
            done.set()
            sampler.join()
            time.sleep(2.0)     # its connections closed and their memory given back
            after = rss_kib(daemon.pid)
            with open(os.path.join(home, "jobs", flood, "output.log"), "rb") as handle:
                said = handle.read().decode("utf-8", "replace")
            report = json.loads(said[said.index("{"):said.rindex("}") + 1])
            client.call("shutdown", {})
        daemon.wait(60)
        return {"before_kib": before, "peak_kib": peak[0], "after_kib": after, "answer_bytes": report["answer"],
                "dropped": sum(conn["dropped"] for conn in report["connections"]), "connections": CONNECTIONS,
                "jobs": JOBS}
    finally:
        if daemon.poll() is None:
            daemon.kill()
            daemon.wait(10)
        log.close()
        sys.path.insert(0, os.path.join(ROOT, "tests"))
        from conftest import _kill_leftovers
        _kill_leftovers(home)         # what a daemon killed half way left: its keeper, its jobs
        shutil.rmtree(base, ignore_errors=True)


def report(figures):
    mib = lambda kib: f"{kib / 1024:.1f} MiB"  # noqa: E731
    return "\n".join([
        f"| daemon RSS ({figures['jobs']} jobs) | MiB |", "|---|---:|",
        f"| before | {mib(figures['before_kib'])} |",
        f"| the most while {figures['connections']} connections of one job ask for `list` "
        f"({figures['answer_bytes']:,} bytes an answer) and never read | {mib(figures['peak_kib'])} |",
        f"| after they closed | {mib(figures['after_kib'])} |",
        "", f"{figures['dropped']} of the {figures['connections']} connections were dropped by the daemon; "
        "each asked for up to 16 MiB of answers (the spec's limit for one connection). The job's connections "
        "share one budget of unread bytes (roost/server/unread.py); RSS sampled every 20 ms.",
    ])


def headline(figures):
    return [("daemon RSS before / most / after (MiB)",
             f"{figures['before_kib'] / 1024:.1f} / {figures['peak_kib'] / 1024:.1f} / "
             f"{figures['after_kib'] / 1024:.1f}")]


if __name__ == "__main__":
    result = measure()
    print(json.dumps(result, indent=1))
    print(report(result))
