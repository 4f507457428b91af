"""What the job tests share: starting jobs on a test daemon, reading rows and logs, and
finding a job's processes the way `stop` does (its identity in /proc/*/environ)."""

import json
import os
import signal
import time

from conftest import AGENTS, DaemonProcess, PYTHON, wait_for

ROW_FIELDS = ("id", "cwd", "kind", "startedAt", "state", "pid", "status", "waitingFor",
              "sessionFile", "name", "endedAt", "summary", "question", "choices", "model",
              "thinking", "context", "error", "stateSince", "reaped", "pinned", "order", "orderKey")


def agent(name, *args):
    return [PYTHON, os.path.join(AGENTS, name), *[str(arg) for arg in args]]


def dispatch(daemon, command, cwd="/tmp", **extra):
    args = {"kind": "shell", "cwd": cwd, "command": command, "env": {}, "name": "",
            "sessionFile": "", "origin": "dispatch", **extra}
    return daemon.call("dispatch", **args)["id"]


def row(daemon, job_id):
    for item in daemon.call("list", all=True)["jobs"]:
        if item["id"] == job_id:
            return item
    return None


def wait_row(daemon, job_id, predicate, timeout=10, what=None):
    def check():
        current = row(daemon, job_id)
        return current if current is not None and predicate(current) else None
    return wait_for(check, timeout=timeout, interval=0.02, what=what or f"job {job_id} to change")


def wait_state(daemon, job_id, *states, timeout=10):
    return wait_row(daemon, job_id, lambda current: current["state"] in states, timeout,
                    what=f"job {job_id} to be {' or '.join(states)}")


def output(home, job_id):
    path = os.path.join(home, "jobs", job_id, "output.log")
    try:
        with open(path, "rb") as handle:
            return handle.read().decode("utf-8", "replace")
    except FileNotFoundError:
        return ""


def job_record(home, job_id):
    with open(os.path.join(home, "jobs", job_id, "job.json")) as handle:
        return json.load(handle)


def job_token(home, job_id):
    """The job's token, from roost's own record of it (roost.jobs.trusted): not in job.json."""
    with open(os.path.join(home, "private", f"{job_id}.json")) as handle:
        return json.load(handle)["token"]


def job_processes(job_id):
    """Live processes (not zombies) whose environment carries the job's identity."""
    found = []
    marker = f"\0ROOST_JOB_ID={job_id}\0".encode()
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as handle:
                environ = b"\0" + handle.read()
        except OSError:
            continue
        if marker in environ:
            found.append(int(name))
    return found


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def write_config(home, config):
    path = os.path.join(home, "roost.json")
    with open(path + ".tmp", "w") as handle:
        json.dump(config, handle)
    os.replace(path + ".tmp", path)


def ticks(text):
    """The numbers of `tick N` lines (works_a_while.py) in order."""
    return [int(line.split()[1]) for line in text.replace("\r", "").split("\n")
            if line.startswith("tick ") and line.split()[1].isdigit()]


def keeper_pid(home):
    with open(os.path.join(home, "keeper.lock")) as handle:
        return int(handle.read().split()[0])


def power_cut(daemon, job_ids):
    """Everything at once, as a reboot: the keeper, the daemon, every job's process."""
    keeper = keeper_pid(daemon.home)
    pids = [pid for job_id in job_ids for pid in job_processes(job_id)]
    os.kill(keeper, signal.SIGKILL)
    daemon.kill9()
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    wait_for(lambda: not alive(keeper) and not any(job_processes(job_id) for job_id in job_ids),
             what="every process gone")


def edit_schedules(home, change):
    path = os.path.join(home, "schedules.json")
    with open(path) as handle:
        data = json.load(handle)
    for record in data["schedules"]:
        change(record)
    with open(path, "w") as handle:
        json.dump(data, handle)


RUN_DAEMON = ("from roost.__main__ import run\n"
              "sys.argv = ['roost', 'daemon', '--foreground']\n"
              "sys.exit(run())\n")


# The daemon, with each write of a job's record taking 0.3 s (a busy disk); patched after
# gevent's patching, as ever.
SLOW_RECORDS = """
import sys, time
from roost.daemon import patching
original = patching.patch
def patch():
    original()
    from roost import store
    write = store.write_json
    def slow(path, *args, **kwargs):
        if path.endswith("job.json"):
            time.sleep(0.3)
        return write(path, *args, **kwargs)
    store.write_json = slow
patching.patch = patch
from roost.daemon.main import main
sys.exit(main([]))
"""


class SlowRecordsDaemon(DaemonProcess):
    code = SLOW_RECORDS


def stays(predicate, seconds, what):
    """`predicate` holds at every look for `seconds` (a bounded watch, not a sleep)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert predicate(), what
        time.sleep(0.02)
