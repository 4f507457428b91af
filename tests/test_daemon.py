"""The daemon's start and stop: home and socket safety, one daemon per home, clean exits."""

import json
import os
import signal
import socket
import subprocess
import sys

import pytest

from conftest import PYTHON, ROOT, DaemonProcess, wait_for


def run_daemon(home, umask=None, timeout=20):
    env = {**os.environ, "ROOST_HOME": home, "PYTHONPATH": ROOT}
    preexec = (lambda: os.umask(umask)) if umask is not None else None
    return subprocess.Popen([PYTHON, "-m", "roost", "daemon", "--foreground"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=preexec,
                            start_new_session=True)


def test_home_and_socket_are_private_even_under_umask_000(home):
    process = DaemonProcess(home)
    process.env["UMASK_FOR_TEST"] = "0"
    proc = run_daemon(home, umask=0)
    try:
        sock_path = os.path.join(home, "roost.sock")
        wait_for(lambda: os.path.exists(sock_path), what="the socket")
        assert oct(os.stat(home).st_mode & 0o777) == oct(0o700)
        assert oct(os.stat(sock_path).st_mode & 0o777) == oct(0o600)
        wait_for(lambda: os.path.exists(os.path.join(home, "daemon.log")))
        for name in ("daemon.log", "daemon.lock"):
            assert os.stat(os.path.join(home, name)).st_mode & 0o077 == 0, name
    finally:
        proc.terminate()
        proc.wait(10)


def test_a_symlinked_home_is_refused(home):
    real = home + "-real"
    os.makedirs(real, mode=0o700)
    os.symlink(real, home)
    proc = run_daemon(home)
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == 1
    assert b"symlink" in err
    assert not os.path.exists(os.path.join(real, "roost.sock"))


def test_a_world_writable_home_is_refused(home):
    os.makedirs(home)
    os.chmod(home, 0o777)
    proc = run_daemon(home)
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == 1 and b"world-writable" in err


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to give the home to another user")
def test_a_home_owned_by_another_user_is_refused(home):
    os.makedirs(home, mode=0o700)
    os.chown(home, 4321, 4321)
    proc = run_daemon(home)
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == 1 and b"belongs to uid 4321" in err


def test_two_daemons_started_at_once_exactly_one_serves(home):
    procs = [run_daemon(home) for _ in range(4)]
    try:
        sock_path = os.path.join(home, "roost.sock")
        wait_for(lambda: sum(p.poll() is not None for p in procs) == 3, timeout=20,
                 what="all but one daemon to give up")
        [winner] = [p for p in procs if p.poll() is None]
        for loser in procs:
            if loser is not winner:
                assert loser.returncode == 1
                assert b"already serves" in loser.stderr.read()
        from roost.client.connection import Client
        with Client.connect(sock_path, timeout=5) as client:
            assert client.call("ping")["pid"] == winner.pid
    finally:
        for p in procs:
            if p.poll() is None:
                p.terminate()
                p.wait(10)


def test_sigterm_unlinks_the_socket_and_exits_cleanly(daemon):
    sock_path = daemon.socket
    daemon.process.send_signal(signal.SIGTERM)
    assert daemon.process.wait(10) == 0
    assert not os.path.exists(sock_path)
    assert "stopped" in open(os.path.join(daemon.home, "daemon.log")).read()


def test_shutdown_answers_then_stops(daemon):
    with daemon.client() as client:
        assert client.call("shutdown", {}) == {}
    assert daemon.process.wait(10) == 0
    assert not os.path.exists(daemon.socket)


def test_a_stale_socket_is_replaced_but_a_live_one_is_not(home):
    os.makedirs(home, mode=0o700)
    sock_path = os.path.join(home, "roost.sock")
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(sock_path)
    stale.close()                        # a socket file nothing answers on
    first = DaemonProcess(home).start()
    try:
        assert first.call("ping")["pid"] == first.process.pid
    finally:
        first.stop()


def test_a_connection_from_another_uid_is_closed_unread(daemon):
    if os.getuid() != 0:
        pytest.skip("needs root to connect as another user")
    os.chmod(os.path.dirname(daemon.home), 0o711)
    os.chmod(daemon.home, 0o711)
    os.chmod(daemon.socket, 0o666)       # let the other user reach it at all
    code = (
        "import os, socket, sys\n"
        "os.setgid(4321); os.setuid(4321)\n"
        "s = socket.socket(socket.AF_UNIX); s.settimeout(5); s.connect(sys.argv[1])\n"
        "s.sendall(b'{\"id\":1,\"op\":\"ping\"}\\n')\n"
        "data = s.recv(100)\n"
        "print('answered' if data else 'closed')\n"
    )
    out = subprocess.run([sys.executable, "-c", code, daemon.socket], capture_output=True, timeout=20)
    assert out.stdout.strip() in (b"closed", b""), out
    assert b"answered" not in out.stdout
    log_path = os.path.join(daemon.home, "daemon.log")
    wait_for(lambda: "refused a connection from uid 4321" in open(log_path).read(), what="the refusal logged")


def test_hello_names_the_ten_capabilities_in_order(daemon):
    result = daemon.call("hello", protocol=1, agent={"name": "t"}, capabilities=["report", 5, "zzz"])
    assert result == {
        "protocol": 1,
        "daemon": {"name": "roost", "version": result["daemon"]["version"]},
        "capabilities": ["replies", "steer", "agent-items", "peers", "spawn", "handback",
                         "events", "watch", "tasks", "workspaces"],
    }


def test_status_is_a_daemon_status(daemon):
    result = daemon.call("status")
    for field in ("pid", "version", "socketDir", "liveJobs", "totalJobs", "ptyError", "startedAt"):
        assert field in result
    assert result["socketDir"] == daemon.home
    assert result["pid"] == daemon.process.pid


def test_hub_ops_are_refused_after_hello(daemon):
    with daemon.client() as client:
        client.call("hello", {"protocol": 1})
        response = client.request("shutdown", {})
        assert response["ok"] is False and response["code"] == "unsupported"
        assert client.call("ping")["pid"]
    assert daemon.process.poll() is None
    json.dumps(response)


def test_a_home_too_deep_for_a_socket_gets_its_socket_in_a_private_runtime_dir(home):
    from roost import paths

    deep = os.path.join(home, "d" * 60, "e" * 60)
    # Short, as a real one is (pytest-xdist's workers make tmp_path longer than a socket's path may be).
    runtime = os.path.join(os.path.dirname(home), "run")
    os.makedirs(runtime, mode=0o700)
    os.makedirs(os.path.dirname(deep), mode=0o700)
    daemon = DaemonProcess(deep, {"XDG_RUNTIME_DIR": runtime})
    daemon.socket = paths.default_socket(deep, {"XDG_RUNTIME_DIR": runtime})
    assert daemon.socket.startswith(runtime + "/roost-")
    daemon.start()
    try:
        assert oct(os.stat(os.path.dirname(daemon.socket)).st_mode & 0o777) == oct(0o700)
        with open(os.path.join(deep, "socket.path")) as handle:
            assert handle.read().strip() == daemon.socket
        # The CLI finds it from the home alone.
        out = daemon.cli("status", "--json")
        assert out.returncode == 0, out.stderr
        assert json.loads(out.stdout)["socketDir"] == os.path.dirname(daemon.socket)
    finally:
        daemon.stop()


def test_a_runtime_socket_dir_of_someone_else_is_refused(home, tmp_path):
    if os.getuid() != 0:
        pytest.skip("needs root to plant a directory of another user")
    from roost import paths

    deep = os.path.join(home, "d" * 60, "e" * 60)
    # Short, as a real one is (pytest-xdist's workers make tmp_path longer than a socket's path may be).
    runtime = os.path.join(os.path.dirname(home), "run")
    os.makedirs(runtime, mode=0o700)
    planted = os.path.dirname(paths.default_socket(deep, {"XDG_RUNTIME_DIR": runtime}))
    os.makedirs(planted)
    os.chown(planted, 4321, 4321)
    env = {**os.environ, "ROOST_HOME": deep, "PYTHONPATH": ROOT, "XDG_RUNTIME_DIR": runtime}
    out = subprocess.run([PYTHON, "-m", "roost", "daemon", "--foreground"], env=env,
                         capture_output=True, timeout=20)
    assert out.returncode == 1 and b"belongs to uid 4321" in out.stderr
