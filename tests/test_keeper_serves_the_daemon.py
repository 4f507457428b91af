"""The keeper serves only the daemon (issue 26 item 2): a job's process, of the same user
and outside any jail, that reads the home's private/keeper.secret still gets no terminal, spawns
nothing and stops nothing; the daemon's restarts (kill -9 included) still adopt every job
(tests/test_jobs_survive.py); a keeper of an older wire version is adopted, then retired."""

import json
import os

from conftest import DaemonProcess
from jobkit import agent, alive, dispatch, output, wait_row, wait_state
from keeperkit import older_keeper
from roost.keeper import admission
from roost.keeper import wire as keeper_wire

ALL_OPS = ("fds", "spawn", "signal", "release", "bye", "hello", "probe")


def keeper_pid(home):
    with open(os.path.join(home, "keeper.lock")) as handle:
        return int(handle.read().split()[0])


def test_a_job_cannot_get_a_terminal_or_anything_else_from_the_keeper(daemon):
    victim = dispatch(daemon, ["sh", "-c", "echo victim ready; sleep 60"])
    victim_pid = wait_row(daemon, victim, lambda row: row["pid"] and "victim ready" in output(daemon.home, victim))["pid"]
    secret_file = admission.secret_path(daemon.home)
    assert os.stat(secret_file).st_mode & 0o777 == 0o600
    # Without a jail: a jailed job sees neither the secret nor the keeper's socket (test_jail).
    thief = dispatch(daemon, agent("keeper_stranger.py", keeper_wire.socket_path(daemon.home), "@" + secret_file,
                                   victim, *ALL_OPS), sandbox=False)
    wait_state(daemon, thief, "done", "failed")
    said = output(daemon.home, thief)
    tried = json.loads(said[said.index("{"):said.rindex("}") + 1])
    assert {op: (got["answers"], got["fds"]) for op, got in tried.items()} == {op: ([], 0) for op in ALL_OPS}
    # The victim was neither signalled nor let go, no job was spawned for the thief, and
    # the daemon's own connection to the keeper is whole: a new job runs.
    assert alive(victim_pid) and wait_row(daemon, victim, lambda row: row["state"] == "working")
    fresh = dispatch(daemon, ["sh", "-c", "echo still served"])
    assert wait_state(daemon, fresh, "done")["summary"] == "still served"
    assert daemon.call("status")["ptyError"] is None
    with open(os.path.join(daemon.home, "keeper.log")) as handle:
        assert handle.read().count("is not the daemon") == len(ALL_OPS)
    daemon.call("stop", id=victim)


def test_a_keeper_of_an_older_version_is_adopted_then_retired(home):
    os.makedirs(os.path.join(home, "jobs"), mode=0o700)
    secret = admission.ensure_secret(home)
    old = older_keeper(home, secret)
    daemon = DaemonProcess(home).start()
    try:
        # It held no job: told to leave once none runs, it goes at once, and the next job
        # starts a keeper of this version.
        assert old.wait(10) == 0
        job = dispatch(daemon, ["sh", "-c", "echo on the new keeper"])
        assert wait_state(daemon, job, "done")["summary"] == "on the new keeper"
        assert keeper_pid(home) != old.pid
        checks = {check["check"]: check for check in daemon.call("doctor")["roost"]}
        assert checks["keeper"]["text"].endswith(f"wire version {keeper_wire.VERSION}")
    finally:
        daemon.stop()


def test_a_secret_a_roost_before_kept_in_the_home_itself_serves_then_moves_into_private(home):
    # What such a roost left: its secret in the home (keeper.secret), its keeper running.
    os.makedirs(os.path.join(home, "jobs"), mode=0o700)
    earlier = os.path.join(home, admission.SECRET_NAME)
    secret = "5e" * 32
    with open(os.open(earlier, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as handle:
        handle.write(secret + "\n")
    keeper = older_keeper(home, secret, version=keeper_wire.VERSION)
    daemon = DaemonProcess(home).start()
    try:
        job = dispatch(daemon, ["sh", "-c", "echo served"])
        assert wait_state(daemon, job, "done")["summary"] == "served"
        assert keeper_pid(home) == keeper.pid       # proven with the secret where it was
        daemon.call("shutdown")
        assert keeper.wait(10) == 0
        daemon.process.wait(15)
        daemon = DaemonProcess(home).start()
        job = dispatch(daemon, ["sh", "-c", "echo on a new keeper"])
        assert wait_state(daemon, job, "done")["summary"] == "on a new keeper"
        assert keeper_pid(home) != keeper.pid
        moved = admission.secret_path(home)
        assert os.path.dirname(moved) == os.path.join(home, "private") and not os.path.exists(earlier)
        with open(moved) as handle:
            assert handle.read().strip() == secret
        assert os.stat(moved).st_mode & 0o777 == 0o600
        assert os.stat(os.path.dirname(moved)).st_mode & 0o777 == 0o700
    finally:
        daemon.stop()
