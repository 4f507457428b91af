"""Protocol agents (roost_agent.py and the fake agents built on it, tests/agents/proto_*.py) run
as jobs from a profile, and what the tests watch of them: the relay that records each line on
the wire, the job's row and the files its agent writes; the interpreters they run under."""

import glob
import json
import os
import shutil
import socket
import subprocess
import sys
import threading

import pytest

from conftest import AGENTS, PYTHON, ROOT, wait_for
from jobkit import job_token


# The oldest Python 3 each supported base offers: 3.8 (the floor roost_agent.py keeps), and
# 3.9, Debian bullseye's, the base of the release (scripts/release also runs the example
# agent on bullseye's own 3.9).
OLD_PYTHONS = ((3, 8), (3, 9))


def interpreters():
    """This test run's Python, and a real 3.8 and 3.9 where they are installed (pyenv or PATH)."""
    found = [sys.executable]
    for major, minor in OLD_PYTHONS:
        name = f"python{major}.{minor}"
        candidates = [shutil.which(name)] + sorted(glob.glob(os.path.expanduser(f"~/.pyenv/versions/{major}.{minor}*/bin/{name}")))
        for candidate in candidates:
            if not candidate:
                continue
            try:
                check = subprocess.run([candidate, "-c", "import sys; print(sys.version_info[:2])"],
                                       capture_output=True, timeout=30)
            except OSError:
                continue
            if check.returncode == 0 and check.stdout.strip() == f"({major}, {minor})".encode():
                found.append(candidate)
                break
    return found


RECORDER = os.path.join(AGENTS, "proto_recorder.py")


CRASHER = os.path.join(AGENTS, "proto_crasher.py")


NO_CLOSE = os.path.join(AGENTS, "proto_no_close.py")


EXAMPLES = os.path.join(ROOT, "examples")


class Relay:
    """Unix socket relay: agent <-> relay <-> daemon, recording agent -> daemon lines."""

    def __init__(self, path, upstream):
        self.path = path
        self.upstream = upstream
        self.cond = threading.Condition()
        self.sent = []           # (connection number, message) from the agent, in order
        self.received = []       # (connection number, message) from the daemon, in order
        self.sockets = []
        self.connections = 0
        self.hold = lambda message: False   # True: the request is not passed on
        self.on_sent = None                  # called with each message from the agent
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(path)
        self.listener.listen(16)
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                upstream.connect(self.upstream)
            except OSError:   # the daemon is away: so is the relay's answer
                upstream.close()
                client.close()
                continue
            with self.cond:
                self.connections += 1
                number = self.connections
                self.sockets += [client, upstream]
            threading.Thread(target=self._pump, args=(client, upstream, number), daemon=True).start()
            threading.Thread(target=self._pipe, args=(upstream, client, number), daemon=True).start()

    def _pump(self, client, upstream, number):
        pending = b""
        try:
            while True:
                chunk = client.recv(65536)
                if not chunk:
                    break
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    message = json.loads(line)
                    if self.on_sent is not None:
                        self.on_sent(message)
                    with self.cond:
                        self.sent.append((number, message))
                        self.cond.notify_all()
                    if not self.hold(message):
                        upstream.sendall(line + b"\n")
        except OSError:
            pass
        finally:
            self._close(client, upstream)

    def _pipe(self, source, target, number):
        pending = b""
        try:
            while True:
                chunk = source.recv(65536)
                if not chunk:
                    break
                target.sendall(chunk)
                pending += chunk
                *lines, pending = pending.split(b"\n")
                with self.cond:
                    self.received += [(number, json.loads(line)) for line in lines]
        except OSError:
            pass
        finally:
            self._close(source, target)

    def _close(self, *socks):
        for sock in socks:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def drop_all(self):
        with self.cond:
            socks = list(self.sockets)
        self._close(*socks)

    def ops(self, op=None, connection=None):
        with self.cond:
            return [message for number, message in self.sent
                    if (op is None or message.get("op") == op) and (connection is None or number == connection)]

    def close(self):
        self.listener.close()
        self.drop_all()


class ProtoJob:
    def __init__(self, daemon, job_id):
        self.daemon = daemon
        self.id = job_id
        self.dir = os.path.join(daemon.home, "jobs", job_id)

    def row(self):
        rows = [row for row in self.daemon.call("list", all=True)["jobs"] if row["id"] == self.id]
        return rows[0] if rows else None

    def reply(self, text, **args):
        return self.daemon.call("reply", id=self.id, text=text, **args)

    def handled(self):
        try:
            with open(os.path.join(self.dir, "handled.jsonl"), encoding="utf-8") as handle:
                return [json.loads(line) for line in handle]
        except FileNotFoundError:
            return []

    def texts(self):
        return [entry["text"] for entry in self.handled()]

    def wait_texts(self, count, timeout=15):
        return wait_for(lambda: len(self.handled()) >= count and self.texts(), timeout=timeout,
                        what=f"{count} replies handled by job {self.id}")

    def wait_row(self, predicate, what, timeout=15):
        return wait_for(lambda: (lambda row: row if row and predicate(row) else None)(self.row()),
                        timeout=timeout, what=what)

    def touch(self, name, text=""):
        with open(os.path.join(self.dir, name), "w") as handle:
            handle.write(text)

    def stdio(self):
        """What the agent's process wrote on stdout and stderr (the recorder keeps it)."""
        with open(os.path.join(self.dir, "stdio.txt"), encoding="utf-8", errors="replace") as handle:
            return handle.read()

    def progress(self):
        with open(os.path.join(self.dir, "agent.json"), encoding="utf-8") as handle:
            return json.load(handle)


def ended(row):
    return row["endedAt"] is not None


def write_profiles(daemon, python=PYTHON):
    profiles = {
        "recorder": {"command": [python, RECORDER], "task": "type", "protocol": True},
        "crasher": {"command": [python, CRASHER, "boom"], "task": "type", "protocol": True},
        "no-close": {"command": [python, NO_CLOSE], "protocol": True},
        "echo": {"command": [python, os.path.join(EXAMPLES, "echo_agent.py")], "task": "type", "protocol": True},
        "ask": {"command": [python, os.path.join(EXAMPLES, "ask_agent.py"), "greeting.txt"], "protocol": True},
        "helper": {"command": [python, os.path.join(EXAMPLES, "helper_agent.py")], "protocol": True},
        "lead": {"command": [python, os.path.join(EXAMPLES, "lead_agent.py"), "helper"], "task": "type",
                 "protocol": True},
    }
    with open(os.path.join(daemon.home, "roost.json"), "w", encoding="utf-8") as handle:
        json.dump({"agentProfiles": profiles}, handle)


def start(daemon, profile, task=None, env=None, python=PYTHON, cwd=None):
    write_profiles(daemon, python)
    launch = {"kind": "shell", "cwd": cwd or os.path.dirname(daemon.home), "sessionFile": "",
              "command": [], "env": env or {}, "name": profile, "origin": "dispatch", "profile": profile}
    if task is not None:
        launch["task"] = task
    return ProtoJob(daemon, daemon.call("dispatch", **launch)["id"])


def acked_seqs(relay):
    return {ack["args"]["seq"] for ack in relay.ops("ack")}


def through(relay):
    return {"PROTO_RELAY_SOCKET": relay.path}


def token_of(daemon, job_id):
    return job_token(daemon.home, job_id)


def reported(row):
    return row.get("capabilities") is not None


@pytest.fixture
def relay(daemon):
    """A relay between the agent and the daemon's socket (an agent's env `through(relay)`)."""
    relay = Relay(os.path.join(os.path.dirname(daemon.home), "relay.sock"), daemon.socket)
    yield relay
    relay.close()
