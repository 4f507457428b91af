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


def proxies_of(home):
    """The `roost proxy` processes serving `home` (the remote side of each connection)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                argv = handle.read().split(b"\0")
            with open(f"/proc/{pid}/environ", "rb") as handle:
                environ = handle.read()
        except OSError:
            continue
        if b"proxy" in argv and f"ROOST_HOME={home}\0".encode() in environ:
            found.append(int(pid))
    return found


@pytest.mark.skipif(not os.path.exists(TMUX), reason="tmux is not installed")
def test_the_hub_shows_two_machines_and_one_that_drops_comes_back(daemon, sshd, remote):
    env = local_env(daemon.home, sshd, remote)
    daemon.call("dispatch", kind="shell", cwd="/tmp", command=agent("works_a_while.py", 120, 0.2), env={},
                name="near", sessionFile="", origin="dispatch")
    far = remote.call("dispatch", kind="shell", cwd="/tmp", command=agent("asks_question.py"), env={},
                      name="far", sessionFile="", origin="dispatch", term={"settleMs": 200})["id"]
    wait_row(remote, far, lambda row: row["state"] == "blocked", what="the remote job to ask")
    terminal = Tmux(os.path.dirname(daemon.home), env)
    try:
        terminal.start([PYTHON, "-m", "roost", "--host", "local", "hub", "--host", HOST],
                       env={"TERM": "xterm-256color"})
        screen = terminal.wait_screen(lambda text: f"{HOST}:far" in text and "local:near" in text, timeout=30,
                                      what="both machines' rows")
        assert f"local up   {HOST} up" in screen
        # A key on a row goes to its machine: the reply reaches the remote job.
        terminal.keys("g")           # the first row: the remote one, which needs you
        terminal.wait_screen(lambda text: f"▸ ◆ {HOST}:far" in text, what="the remote row selected")
        terminal.keys("r")
        terminal.wait_text("reply to far")
        terminal.type("2")
        terminal.keys("Enter")
        wait_for(lambda: "using sqlite" in output(remote.home, far), what="the reply on the remote machine")
        # Attach to the remote row from the hub, over its machine's connection, and back.
        terminal.wait_screen(lambda text: "NEEDS YOU (1)" in text, what="the remote job to ask again")
        terminal.keys("Enter")
        terminal.wait_text("Choose [1-3]:")
        terminal.type("3")
        terminal.keys("Enter")
        terminal.wait_text("using none")
        terminal.keys("C-q")
        terminal.wait_text("detached from far")
        # The machine drops: its connection is cut and its sshd is gone for a while.
        sshd.stop()
        for pid in proxies_of(remote.home):
            os.kill(pid, 9)
        screen = terminal.wait_screen(lambda text: f"{HOST} DOWN" in text, timeout=20, what="the host shown down")
        assert "local:near" in screen and f"{HOST}:far" not in screen
        sshd.listen()
        terminal.wait_screen(lambda text: f"{HOST} up" in text and f"{HOST}:far" in text, timeout=60,
                             what="the host back")
        assert terminal.dead().startswith("0")      # the hub runs on
    finally:
        terminal.stop()


def test_the_ssh_command_is_an_argv_list_and_the_remote_words_stay_words():
    from roost.client import hosts

    assert hosts.proxy_argv("box", {}) == ["ssh", "--", "box", "roost proxy"]
    setting = {"ssh": {"command": ["ssh", "-o", "BatchMode=yes"], "roost": ["/opt/my roost/roost"]}}
    assert hosts.proxy_argv("me@box", setting) == ["ssh", "-o", "BatchMode=yes", "--", "me@box",
                                                   "'/opt/my roost/roost' proxy"]
    assert hosts.proxy_argv("box", {"ssh": ["autossh", "-M", "0"]})[:3] == ["autossh", "-M", "0"]
    for bad in ("-oProxyCommand=x", "a b", "box\n", ""):
        with pytest.raises(hosts.BadSetting):
            hosts.proxy_argv(bad, {})
    for bad in ({"ssh": "ssh -p 22"}, {"ssh": {"roost": "roost"}}, {"ssh": []}):
        with pytest.raises(hosts.BadSetting):
            hosts.proxy_argv("box", bad)
    assert hosts.hosts_of({"hosts": ["local", "box"]}) == ["local", "box"]
    with pytest.raises(hosts.BadSetting):
        hosts.hosts_of({"hosts": "box"})


def test_host_options_that_cannot_go_together_are_bad_usage(home):
    env = {**os.environ, "ROOST_HOME": home, "PYTHONPATH": ROOT}
    both = roost(env, "--socket", "/tmp/x.sock", "--host", "box", "list")
    assert both.returncode == 2 and b"--socket and --host" in both.stderr
    several = roost(env, "--host", "a", "--host", "b", "list")
    assert several.returncode == 2 and b"several --host are for the hub" in several.stderr
    here = roost(env, "--host", "local", "ping")        # `local` is this machine: no ssh
    assert here.returncode == 0, here.stderr


def test_a_jobs_commands_ignore_roost_host(daemon):
    # Inside a job ROOST_HOST (inherited from the person's shell) must not send the
    # job's own commands elsewhere: they go to the daemon that runs it.
    done = daemon.cli("list", "--json", env={"ROOST_HOST": "-not-a-host", "ROOST_JOB_ID": "x1"})
    assert done.returncode == 0, done.stderr
    refused = daemon.cli("list", "--json", env={"ROOST_HOST": "-not-a-host"})
    assert refused.returncode == 3 and b"not a host name" in refused.stderr


@pytest.mark.skipif(not os.path.exists(TMUX), reason="tmux is not installed")
def test_a_host_slow_to_answer_holds_no_one_elses_rows(daemon, sshd):
    silent = os.path.join(os.path.dirname(daemon.home), "silent-roost")
    with open(silent, "w") as handle:
        handle.write("#!/bin/sh\nexec sleep 20\n")        # answers nothing, closes nothing
    os.chmod(silent, 0o755)
    env = dict(daemon.env)
    with open(os.path.join(daemon.home, "roost.json"), "w") as handle:
        json.dump({"ssh": {"command": sshd.setting(daemon.home)["command"], "roost": [silent]},
                   "hosts": ["local", HOST]}, handle)
    daemon.call("dispatch", kind="shell", cwd="/tmp", command=agent("works_a_while.py", 120, 0.2), env={},
                name="near", sessionFile="", origin="dispatch")
    terminal = Tmux(os.path.dirname(daemon.home), env)
    try:
        terminal.start([PYTHON, "-m", "roost", "hub"], env={"TERM": "xterm-256color"})    # roost.json's hosts
        screen = terminal.wait_screen(lambda text: "local:near" in text, what="this machine's rows")
        assert f"{HOST} connecting" in screen
        terminal.keys("q")
        terminal.wait_screen(lambda _: terminal.dead().startswith("1"), timeout=20, what="the hub to quit")
    finally:
        terminal.stop()
