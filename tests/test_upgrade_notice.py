"""roost installed over a running daemon (issue 11): the old daemon runs on with its jobs,
the next command says the daemon is older than the CLI and how to move on, and after
`shutdown --keep-workers` the new daemon adopts the old one's jobs and keeper. From source,
with the older daemon's version set before it starts; scripts/release runs the same with
two real builds of different versions."""

import os
import subprocess
import sys

from conftest import ROOT, DaemonProcess, wait_for
from jobkit import alive, dispatch, output, wait_row
from roost import __version__
from roost.cli.context import daemon_version, daemon_version_notice

OLDER = "0.0.9"


class OlderDaemon(DaemonProcess):
    """A real daemon whose version is OLDER, as a previous release's would be."""

    code = (f"import sys, roost; roost.__version__ = {OLDER!r}\n"
            "from roost.__main__ import run\n"
            "sys.argv = ['roost', 'daemon', '--foreground']\n"
            "sys.exit(run())\n")


def keeper_pid(home):
    with open(os.path.join(home, "keeper.lock")) as handle:
        return int(handle.read().split()[0])


def test_the_daemon_records_its_version_in_its_lock(daemon):
    with open(os.path.join(daemon.home, "daemon.lock")) as handle:
        assert handle.read() == f"{daemon.process.pid}\nroost {__version__}\n"
    assert daemon_version(daemon.socket) == __version__
    assert daemon.cli("list").stderr == b"", "the same version: nothing to say"


def test_what_the_notice_says():
    older = daemon_version_notice("0.1.0.dev0", "0.1.0")
    assert "the daemon runs roost 0.1.0.dev0, older than this roost 0.1.0" in older
    assert "`roost shutdown --keep-workers`" in older
    assert "an older roost, older than" in daemon_version_notice("", "0.1.0")   # a lock with no version
    assert "newer than this roost 0.1.0" in daemon_version_notice("0.2.0", "0.1.0")
    assert daemon_version_notice("0.1.0", "0.1.0") is None
    assert daemon_version_notice(None, "0.1.0") is None   # no lock beside the socket: nothing known


def test_a_newer_cli_says_so_then_the_new_daemon_adopts_the_old_ones_jobs(home):
    old = OlderDaemon(home).start()
    try:
        job = dispatch(old, ["sh", "-c", "echo started-under-the-old; while read line; do echo heard-$line; done"])
        pid = wait_row(old, job, lambda row: row["pid"])["pid"]
        wait_for(lambda: "started-under-the-old" in output(home, job), what="the job's first output")
        keeper = keeper_pid(home)

        listed = old.cli("list")
        assert listed.returncode == 0 and job in listed.stdout.decode()
        notice = listed.stderr.decode()
        assert notice.count("\n") == 1, "said once per command"
        assert f"the daemon runs roost {OLDER}, older than this roost {__version__}" in notice
        assert "roost shutdown --keep-workers" in notice

        stopped = old.cli("shutdown", "--keep-workers")
        assert stopped.returncode == 0 and stopped.stderr == b"", "shutdown itself is not told what it does"
        old.process.wait(15)
    finally:
        old.stop()

    # Any command starts the new daemon (this CLI's version): it adopts the job and the keeper.
    new = DaemonProcess(home)
    pong = new.cli("ping", "--json")
    assert pong.returncode == 0 and pong.stderr == b"" and f'"version": "{__version__}"' in pong.stdout.decode()
    try:
        row = wait_row(new, job, lambda row: row["pid"] == pid and row)
        assert row["state"] in ("working", "blocked") and alive(pid)
        assert keeper_pid(home) == keeper and alive(keeper)
        assert "started-under-the-old" in new.cli("peek", job).stdout.decode(), "its output is kept"
        assert new.cli("reply", "--steer", job, "again").returncode == 0
        wait_for(lambda: "heard-again" in output(home, job), what="the adopted job to answer")
    finally:
        new.cli("shutdown")


def test_the_version_check_reads_one_small_file():
    """It adds no request and no import to a command: the daemon's version is read from its
    lock file beside the socket."""
    done = subprocess.run(
        [sys.executable, "-c",
         "import sys; import roost.cli.context as c\n"
         "before = set(sys.modules)\n"
         "c.daemon_version('/nonexistent/roost.sock')\n"
         "print(sorted(set(sys.modules) - before))\n"],
        env={**os.environ, "PYTHONPATH": ROOT}, capture_output=True, text=True, timeout=30)
    assert done.stdout == "[]\n", done.stderr
