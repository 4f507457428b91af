"""A machine that restarts (issue 19 item 2): 200 jobs of a resumable profile waiting at
a prompt, then kill -9 of the keeper, the daemon and every job at once, as a power cut
would; a new daemon on the same home brings each back with its resume argv. Measured:
from the new daemon's start to every job's row running again with a new pid, and to
every one waiting at its prompt again (aim: all back within 10 s).

    .venv/bin/python bench/reboot.py        # prints the figures
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from roost.client.connection import Client  # noqa: E402
from roost.jobs.processes import jobs_with_processes  # noqa: E402
from benchkit import wait  # noqa: E402

JOBS = 200
PROMPT = ["sh", "-c", "printf 'ready> '; exec cat"]


class Daemon:
    def __init__(self, home, log):
        self.env = {**os.environ, "ROOST_HOME": home, "PYTHONPATH": ROOT}
        self.env.pop("ROOST_SOCKET", None)
        self.home = home
        self.started = time.perf_counter()
        self.process = subprocess.Popen([sys.executable, "-m", "roost", "daemon", "--foreground"],
                                        env=self.env, stdout=log, stderr=subprocess.STDOUT,
                                        start_new_session=True)
        self.client = wait(self._connect, 60, "the daemon")

    def _connect(self):
        try:
            return Client.connect(os.path.join(self.home, "roost.sock"), timeout=120)
        except OSError:
            return None

    def call(self, op, **args):
        return self.client.call(op, args)

    def rows(self):
        return {row["id"]: row for row in self.call("list", all=True)["jobs"]}


def power_cut(daemon, ids):
    with open(os.path.join(daemon.home, "keeper.lock")) as handle:
        keeper = int(handle.read().split()[0])
    os.kill(keeper, signal.SIGKILL)
    daemon.process.kill()
    daemon.process.wait(30)
    for _ in range(50):
        alive = jobs_with_processes() & set(ids)
        if not alive:
            return
        for pid in _pids_of(alive):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.1)
    raise RuntimeError("jobs' processes outlived the power cut")


def _pids_of(ids):
    markers = [f"\0ROOST_JOB_ID={job_id}\0".encode() for job_id in ids]
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/environ", "rb") as handle:
                    environ = b"\0" + handle.read()
            except OSError:
                continue
            if any(marker in environ for marker in markers):
                yield int(name)


def measure():
    base = tempfile.mkdtemp(prefix="rr-", dir="/tmp")
    home = os.path.join(base, "h")
    os.makedirs(home, mode=0o700)
    with open(os.path.join(home, "roost.json"), "w") as handle:
        json.dump({"agentProfiles": {"keeps": {"command": PROMPT, "resume": PROMPT, "task": "type",
                                               "term": {"settleMs": 200, "waiting": "^ready>"}}}}, handle)
    log = open(os.path.join(base, "daemon.err"), "wb")
    daemon = None
    try:
        daemon = Daemon(home, log)
        ids = [daemon.call("dispatch", kind="shell", cwd="/tmp", command=[], env={}, name="", sessionFile="",
                           origin="dispatch", profile="keeps")["id"] for _ in range(JOBS)]
        wait(lambda: all(row["status"] == "waiting" for row in daemon.rows().values()), 120, "every prompt")
        before = {job_id: row["pid"] for job_id, row in daemon.rows().items()}
        power_cut(daemon, ids)
        daemon = Daemon(home, log)
        answered = time.perf_counter() - daemon.started

        def back(waiting):
            rows = daemon.rows()
            return all(rows[job_id]["state"] in ("working", "blocked") and rows[job_id]["pid"] not in (None, before[job_id])
                       and (not waiting or rows[job_id]["status"] == "waiting") for job_id in ids)

        wait(lambda: back(False), 120, "every job running again")
        running = time.perf_counter() - daemon.started
        wait(lambda: back(True), 120, "every job at its prompt again")
        waiting = time.perf_counter() - daemon.started
        return {"jobs": JOBS, "socket_answers_s": round(answered, 2), "all_running_s": round(running, 2),
                "all_waiting_s": round(waiting, 2)}
    finally:
        if daemon is not None:
            try:
                daemon.call("shutdown")
                daemon.process.wait(120)
            except Exception:
                daemon.process.kill()
        log.close()
        shutil.rmtree(base, ignore_errors=True)


def report(figures):
    return "\n".join([
        "| measure | figure | aim |",
        "|---|---|---|",
        f"| {figures['jobs']} resumable jobs after kill -9 of the keeper, the daemon and every job: "
        f"the new daemon's socket answers | {figures['socket_answers_s']} s | |",
        f"| ... every job running again with a new pid (its resume argv) | {figures['all_running_s']} s | < 10 s |",
        f"| ... every job waiting at its prompt again | {figures['all_waiting_s']} s | |",
    ])


if __name__ == "__main__":
    result = measure()
    print(json.dumps(result, indent=2))
    print(report(result))
