"""`roost doctor`'s checks of roost itself (issue 18): the home and socket modes, the
keeper, the daemon's version against the CLI's, and the notification sinks, each
judged on a real daemon."""

import json
import os
import pytest

from conftest import DaemonProcess, tracebacks_in_log
from jobkit import write_config


def doctor(daemon, env=None):
    done = daemon.cli("doctor", "--json", env=env)
    assert done.returncode == 0, done.stderr
    return {check["check"]: check for check in json.loads(done.stdout)["roost"]}


def program(folder, name, body="exit 0"):
    path = os.path.join(folder, name)
    with open(path, "w") as handle:
        handle.write(f"#!/bin/sh\n{body}\n")
    os.chmod(path, 0o755)
    return path


@pytest.fixture
def desktop(home, tmp_path):
    """A daemon whose PATH has a notify-send and whose environment names a session bus."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    sender = program(str(bin_dir), "notify-send")
    process = DaemonProcess(home, {"PATH": f"{bin_dir}:/usr/bin:/bin",
                                   "DBUS_SESSION_BUS_ADDRESS": "unix:path=/nowhere"}).start()
    yield process, sender
    process.stop()
    assert not tracebacks_in_log(home)


def test_a_fresh_daemon_passes_every_check_of_its_own(desktop):
    daemon, sender = desktop
    checks = doctor(daemon)
    for name in ("home", "socket", "keeper", "version", "notify.desktop", "notify.terminal"):
        assert checks[name]["verdict"] == "ok", checks[name]
    assert checks["home"]["text"] == f"{daemon.home} (0700)"
    assert checks["keeper"]["text"].startswith("running (pid ")
    assert checks["version"]["text"] == "the daemon and the CLI are both roost 0.1.0"
    assert checks["notify.desktop"]["text"] == f"{sender}, with a session bus"
    assert checks["notify.command"]["verdict"] == "off"
    older = {check["check"]: check for check in daemon.call("doctor", cliVersion="0.0.9")["roost"]}
    assert older["version"]["verdict"] == "problem"
    assert older["version"]["text"].startswith("the daemon runs roost 0.1.0, this CLI is 0.0.9")
    text = daemon.cli("doctor").stdout.decode()
    assert "notify.command   off: no command set" in text and "aider" in text


def test_a_home_or_socket_others_may_reach_is_a_problem(daemon):
    socket = os.path.join(daemon.home, "roost.sock")
    os.chmod(daemon.home, 0o750)
    os.chmod(socket, 0o666)
    try:
        checks = doctor(daemon)
    finally:
        os.chmod(socket, 0o600)
        os.chmod(daemon.home, 0o700)
    assert checks["home"]["verdict"] == "problem" and "has mode 0750, not 0700" in checks["home"]["text"]
    assert checks["socket"]["verdict"] == "problem" and "has mode 0666, not 0600" in checks["socket"]["text"]
    again = doctor(daemon)
    assert again["home"]["verdict"] == again["socket"]["verdict"] == "ok"


def test_a_missing_sink_is_a_problem(home, tmp_path):
    daemon = DaemonProcess(home, {"PATH": "/usr/bin:/bin", "DBUS_SESSION_BUS_ADDRESS": "unix:path=/nowhere"})
    write_config_before(home, {"notify": {"command": ["no-such-notifier", "--topic", "x"]}})
    daemon.start()
    try:
        checks = doctor(daemon)
        assert checks["notify.command"]["verdict"] == "problem"
        assert "no-such-notifier (notify.command) is not found" in checks["notify.command"]["text"]
        if not any(os.access(os.path.join(folder, "notify-send"), os.X_OK) for folder in ("/usr/bin", "/bin")):
            assert checks["notify.desktop"]["verdict"] == "problem"
            assert "notify-send is not on the daemon's PATH" in checks["notify.desktop"]["text"]
        found = program(str(tmp_path), "notifier")
        write_config(home, {"notify": {"command": [found], "desktop": False}})
        checks = doctor(daemon)
        assert checks["notify.command"] == {"check": "notify.command", "verdict": "ok", "text": found}
        assert checks["notify.desktop"]["verdict"] == "off"
    finally:
        daemon.stop()
    assert not tracebacks_in_log(home)


def write_config_before(home, config):
    os.makedirs(home, mode=0o700, exist_ok=True)
    write_config(home, config)
