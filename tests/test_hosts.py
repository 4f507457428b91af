"""Other machines (issue 18): `roost proxy` and `roost --host` over a real ssh to a real
sshd on 127.0.0.1 (tests/sshkit.py). The remote daemon runs on a home of the test's; the
local CLI reaches it only through `ssh box roost proxy`."""

import json
import os
import shutil
import subprocess

import pytest

from conftest import PYTHON, ROOT, DaemonProcess, _kill_leftovers, short_tempdir, wait_for
from jobkit import agent, output, wait_row
from sshkit import HOST, sshd  # noqa: F401  (the fixture)
from tmuxkit import TMUX, Tmux


@pytest.fixture
def remote():
    """The other machine's daemon (its own home)."""
    base = short_tempdir()
    process = DaemonProcess(os.path.join(base, "h")).start()
    yield process
    process.stop()
    _kill_leftovers(process.home)
    shutil.rmtree(base, ignore_errors=True)


def local_env(home, sshd, remote):
    """A CLI on `home` whose roost.json says how to reach `remote`'s daemon over ssh."""
    os.makedirs(home, mode=0o700, exist_ok=True)
    with open(os.path.join(home, "roost.json"), "w") as handle:
        json.dump({"ssh": sshd.setting(remote.home)}, handle)
    env = dict(os.environ)
    env.pop("ROOST_SOCKET", None)
    env.update({"ROOST_HOME": home, "PYTHONPATH": ROOT})
    return env


def roost(env, *argv, input=None, timeout=60):
    return subprocess.run([PYTHON, "-m", "roost", *argv], env=env, input=input,
                          capture_output=True, timeout=timeout)


def test_proxy_bridges_stdin_and_stdout_to_the_daemon_it_starts(home):
    env = {**os.environ, "ROOST_HOME": home, "PYTHONPATH": ROOT}
    env.pop("ROOST_SOCKET", None)
    requests = b'{"id": 1, "op": "ping", "args": {}}\n{"id": 2, "op": "list", "args": {}}\n'
    done = roost(env, "proxy", input=requests)
    assert done.returncode == 0, done.stderr
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    # Byte for byte: the daemon's answers and nothing else, though stdin closed first.
    assert [answer["id"] for answer in answers] == [1, 2]
    assert all(answer["ok"] for answer in answers)
    assert os.path.exists(os.path.join(home, "roost.sock"))     # it started the daemon


def test_list_run_and_reply_on_the_other_machine(home, sshd, remote):
    env = local_env(home, sshd, remote)
    started = roost(env, "--host", HOST, "run", "--name", "far", "--cwd", "/tmp", "--json", "--",
                    *agent("asks_question.py"))
    assert started.returncode == 0, started.stderr
    job_id = json.loads(started.stdout)["id"]
    wait_row(remote, job_id, lambda row: row["state"] == "blocked", what="the remote job to ask")
    listed = roost({**env, "ROOST_HOST": HOST}, "list", "--json")     # ROOST_HOST works as --host
    assert listed.returncode == 0, listed.stderr
    assert [job["name"] for job in json.loads(listed.stdout)["jobs"]] == ["far"]
    # The reply is the person's op: the remote daemon took the proxy, started by sshd for
    # the user outside every job, as the person.
    replied = roost(env, "--host", HOST, "reply", job_id, "2")
    assert replied.returncode == 0, replied.stderr
    wait_for(lambda: "using sqlite" in output(remote.home, job_id), what="the reply on the remote job")
    # Nothing of it went to this machine's daemon: none was started.
    assert not os.path.exists(os.path.join(home, "roost.sock"))


def test_an_unreachable_host_says_so_with_exit_status_3(home, sshd, remote):
    env = local_env(home, sshd, remote)
    with open(os.path.join(home, "roost.json"), "w") as handle:
        json.dump({"ssh": {"command": sshd.setting(remote.home)["command"], "roost": ["/nonexistent/roost"]}}, handle)
    done = roost(env, "--host", HOST, "list")
    assert done.returncode == 3
    assert b"closed the connection" in done.stderr
    refused = roost(env, "--host", "-oProxyCommand=touch /tmp/x", "list")
    assert refused.returncode == 3 and b"not a host name" in refused.stderr


@pytest.mark.skipif(not os.path.exists(TMUX), reason="tmux is not installed")
def test_attach_on_the_other_machine(home, sshd, remote):
    env = local_env(home, sshd, remote)
    job_id = remote.call("dispatch", kind="shell", cwd="/tmp", command=agent("asks_question.py"), env={},
                         name="far", sessionFile="", origin="dispatch", term={"settleMs": 200})["id"]
    wait_row(remote, job_id, lambda row: row["state"] == "blocked", what="the remote job to ask")
    terminal = Tmux(os.path.dirname(home), env)
    try:
        terminal.start([PYTHON, "-m", "roost", "--host", HOST, "attach", job_id], env={"TERM": "xterm-256color"})
        terminal.wait_text("Which database should I use?", timeout=20)
        terminal.type("1")
        terminal.keys("Enter")
        terminal.wait_text("using postgres")
        terminal.keys("C-q")
        terminal.wait_text("detached from far")
    finally:
        terminal.stop()
    assert "using postgres" in output(remote.home, job_id)
