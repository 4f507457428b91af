"""pi (a real install of it, where there is one) with roost's extension, against a fake
model server (shared/realagents/fake_llm.py)."""

import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT


PI = os.environ.get("ROOST_TEST_PI") or "/tmp/realagents/pi/node_modules/.bin/pi"


FAKE_LLM = os.environ.get("ROOST_TEST_FAKE_LLM") or os.path.join(
    os.path.dirname(ROOT), "shared", "realagents", "fake_llm.py")


pytestmark = [
    pytest.mark.skipif(not os.path.exists(PI), reason=f"pi is not installed ({PI}; set ROOST_TEST_PI)"),
    pytest.mark.skipif(not os.path.exists(FAKE_LLM), reason=f"no fake model ({FAKE_LLM}; set ROOST_TEST_FAKE_LLM)"),
    pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed"),
]


def serve(tmp_path, *program):
    log = tmp_path / "llm.jsonl"
    process = subprocess.Popen([sys.executable, *program, "--port", "0", "--log", str(log)],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = process.stdout.readline()
    assert line.startswith("LISTENING "), line
    return process, FakeModel(int(line.split()[1]), log)


@pytest.fixture
def model(tmp_path):
    process, fake = serve(tmp_path, FAKE_LLM)
    yield fake
    process.kill()
    process.wait(5)


class FakeModel:
    def __init__(self, port, log):
        self.port = port
        self.log = log

    def requests(self):
        try:
            with open(self.log, encoding="utf-8") as handle:
                return [json.loads(line) for line in handle if line.strip()]
        except FileNotFoundError:
            return []

    def users(self):
        """The last user text of each request, in order."""
        return [request.get("user") for request in self.requests()]


def pi_install():
    """The folder pi is installed in (its node_modules and all), for the jobs' jails to read."""
    root = os.path.realpath(PI)
    while "node_modules" in root.split(os.sep):
        root = os.path.dirname(root)
    return root


def jail_grants(tmp_path):
    """What a user whose pi is installed under /tmp (which a jail has its own of) and whose
    pi's home and logs are outside the job's folder would grant its jail (sandbox)."""
    return {"read": [pi_install()], "write": [str(tmp_path)]}


def offline_world(tmp_path, port):
    """pi's home, config and environment for a run against the fake model (the realagents
    README's)."""
    home = tmp_path / "pihome"
    agent_dir = home / ".pi" / "agent"
    agent_dir.mkdir(parents=True)
    (tmp_path / "work").mkdir()
    (tmp_path / "tmp").mkdir()
    (agent_dir / "models.json").write_text(json.dumps({"providers": {"fake": {
        "baseUrl": f"http://127.0.0.1:{port}/v1", "api": "openai-completions", "apiKey": "fake-key",
        "compat": {"supportsDeveloperRole": False, "supportsReasoningEffort": False},
        "models": [{"id": "fake-model", "name": "Fake Model", "contextWindow": 128000, "maxTokens": 4096}]}}}))
    (agent_dir / "settings.json").write_text(json.dumps(
        {"defaultProvider": "fake", "defaultModel": "fake-model", "enableInstallTelemetry": False}))
    env = {"HOME": str(home), "PI_CODING_AGENT_DIR": str(agent_dir), "PI_OFFLINE": "1",
           "TMPDIR": str(tmp_path / "tmp"), "LANG": "C.UTF-8", "TERM": "xterm-256color",
           "ROOST_PI_LOG": str(tmp_path / "client.log")}
    return env, str(tmp_path / "work")


def reported(row):
    """The row is the agent's report (before the first, it is read off the screen)."""
    return row.get("capabilities") is not None


def user_texts(model):
    return [entry for entry in model.users() if entry]
