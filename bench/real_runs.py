"""The real agents' runs under roost (scripts/try-agents): the fake model each run
talks to (bench/timed_model.py on ROOST_FAKE_LLM's fake_llm.py), a fresh daemon of this
checkout, and what the runs ask of both. bench/try_agents.py, try_limits.py and
try_reboot.py share them."""

import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:0] = [HERE, ROOT]

from benchkit import wait  # noqa: E402
from roost.client.connection import Client  # noqa: E402


class Model:
    def __init__(self, folder):
        fake = os.environ.get("ROOST_FAKE_LLM") or os.path.join(os.path.dirname(ROOT), "shared", "realagents",
                                                                 "fake_llm.py")
        self.log = os.path.join(folder, "model.jsonl")
        self.process = subprocess.Popen([sys.executable, os.path.join(HERE, "timed_model.py"), fake,
                                         "--log", self.log], stdout=subprocess.PIPE, text=True)
        line = self.process.stdout.readline()
        if not line.startswith("LISTENING "):
            raise RuntimeError(f"the fake model did not start: {line!r}")
        self.port = int(line.split()[1])

    def entries(self):
        try:
            with open(self.log, encoding="utf-8") as handle:
                return [json.loads(line) for line in handle if line.strip()]
        except FileNotFoundError:
            return []

    def requests(self, marker=None, since=0.0):
        """The requests (whose last user text has `marker`; that came from `since` on), in
        order: {"id", "t" (when it came), "tools", "toolResult", "answered" (when its answer
        ended, or None)}."""
        asked, answered = [], {}
        for entry in self.entries():
            if entry.get("asked") and (marker is None or marker in (entry.get("user") or "")) \
                    and entry["t"] >= since:
                asked.append({"id": entry["id"], "t": entry["t"], "tools": entry.get("tools", 0),
                              "toolResult": entry.get("toolResult", False)})
            elif entry.get("answered") and "id" in entry:
                answered[entry["id"]] = entry["t"]
        return [dict(request, answered=answered.get(request["id"])) for request in asked]

    def turn(self, marker, with_tools):
        """The request of the agent's turn that carries `marker`, or None. With
        `with_tools`, the first that offers the agent's tools (Claude Code and Codex also
        ask for a title with the task in it, offering none); else the first."""
        for request in self.requests(marker):
            if request["tools"] or not with_tools:
                return request
        return None


def run_folder(prefix):
    """The run's folder: its agents' homes and work folders, the model's log, roost's
    home. Not under /tmp, which a jail has its own of: a home there would be the jail's
    own, writable and gone with it, where a user's is read-only but for what the agent's
    profile may write (TRY_AGENTS_DIR, else /var/tmp)."""
    return tempfile.mkdtemp(prefix=prefix, dir=os.environ.get("TRY_AGENTS_DIR", "/var/tmp"))


class Daemon:
    def __init__(self, folder):
        self.home = os.path.join(folder, "roost")
        os.makedirs(self.home, mode=0o700, exist_ok=True)
        # No profile of its own (the built-in ones run); the agents' install is under /tmp,
        # which their jails see only read-only, as a user's would be. ROOST_TRY_UNJAILED=1:
        # every job without a jail, to set the figures beside a jailed run's.
        sandbox = (False if os.environ.get("ROOST_TRY_UNJAILED") == "1"
                   else {"read": [os.environ.get("REALAGENTS_ROOT", "/tmp/realagents")]})
        with open(os.path.join(self.home, "roost.json"), "w") as handle:
            json.dump({"sandbox": sandbox}, handle)
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": folder, "LANG": "C.UTF-8",
               "ROOST_HOME": self.home, "PYTHONPATH": ROOT}
        self.log = open(os.path.join(folder, "daemon.err"), "wb")
        self.process = subprocess.Popen([sys.executable, "-m", "roost", "daemon", "--foreground"], env=env,
                                        stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        self.socket = os.path.join(self.home, "roost.sock")
        wait(lambda: os.path.exists(self.socket) and self._ping(), 20, "the daemon")

    def _ping(self):
        try:
            return self.call("ping")
        except OSError:
            return None

    def call(self, op, **args):
        with Client.connect(self.socket, timeout=60) as client:
            return client.call(op, args)

    def row(self, job_id):
        for row in self.call("list", all=True)["jobs"]:
            if row["id"] == job_id:
                return row
        return None

    def leave(self):
        try:
            self.call("shutdown")
        except OSError:
            pass
        self.process.wait(30)


def working(row):
    return row.get("state") == "working"


def waiting(protocol):
    if protocol:
        return lambda row: row.get("state") == "blocked" and row.get("waitingFor") != "dialog"
    return lambda row: row.get("status") == "waiting" and row.get("waitingFor") in ("question", "first-prompt")


def job_processes(job_id):
    marker = f"\0ROOST_JOB_ID={job_id}\0".encode()
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/environ", "rb") as handle:
                    if marker in b"\0" + handle.read():
                        found.append(int(name))
            except OSError:
                pass
    return found


def wait_quietly(predicate, timeout):
    try:
        return wait(predicate, timeout, "it")
    except RuntimeError:
        return None
