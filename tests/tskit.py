"""The TypeScript client (clients/typescript) compiled by the package's pinned tsc, once a
session, and run by node."""

import json
import os
import shutil
import subprocess

import pytest

from conftest import ROOT
from protokit import ProtoJob


PACKAGE = os.path.join(ROOT, "clients", "typescript")


NODE = shutil.which("node")


CLIENT_JS = os.path.join(PACKAGE, "dist", "src", "roost-agent.js")


@pytest.fixture(scope="session")
def compiled():
    """The client and its test agent compiled (tsc also checks the types)."""
    tsc = os.path.join(PACKAGE, "node_modules", ".bin", "tsc")
    if not os.path.exists(tsc):
        pytest.fail(f"{tsc} is missing: run scripts/setup (it installs the TypeScript client's dev dependencies)")
    built = subprocess.run([tsc, "-p", PACKAGE], capture_output=True, text=True, timeout=180)
    assert built.returncode == 0, f"tsc failed:\n{built.stdout}{built.stderr}"
    return RECORDER


RECORDER = os.path.join(PACKAGE, "dist", "test", "recorder.js")


def command(*args):
    # The agent's own stdout and stderr go to stdio.txt: the client must write nothing.
    return ["sh", "-c", 'exec "$0" "$@" >>"$ROOST_JOB_DIR/stdio.txt" 2>&1', NODE, RECORDER, *args]


PROFILES = {
    "ts": {"command": command(), "task": "type", "protocol": True},
    "ts-crasher": {"command": command("--crash-on", "boom"), "task": "type", "protocol": True},
    "ts-messages": {"command": command("--messages"), "task": "type", "protocol": True},
    "ts-no-close": {"command": command("--no-close"), "protocol": True},
}


def start(daemon, profile="ts", task=None, env=None):
    with open(os.path.join(daemon.home, "roost.json"), "w", encoding="utf-8") as handle:
        json.dump({"agentProfiles": PROFILES}, handle)
    launch = {"kind": "shell", "cwd": os.path.dirname(daemon.home), "sessionFile": "", "command": [],
              "env": {"PROTO_LOG": os.path.join(os.path.dirname(daemon.home), "client.log"), **(env or {})},
              "name": profile, "origin": "dispatch", "profile": profile}
    if task is not None:
        launch["task"] = task
    return TsJob(daemon, daemon.call("dispatch", **launch)["id"])


class TsJob(ProtoJob):
    def stdio(self):
        try:
            return super().stdio()
        except FileNotFoundError:
            return ""
