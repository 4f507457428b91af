"""Stopping and starting again: stop leaves no process of the job, SIGPIPE is back to
its default in a job, respawn, and a job that keeps dying is backed off then left
failed (issue 3 item 6)."""

import subprocess

import pytest

from clockkit import advance, clocked_daemon  # noqa: F401 (a fixture)
from conftest import PYTHON, wait_for
from jobkit import (agent, alive, dispatch, job_processes, job_record, output, row,
                         wait_row, wait_state, write_config)
from roost.client.connection import Refused


def test_stop_leaves_no_process_with_the_jobs_identity(daemon):
    # One of its processes ignores SIGTERM: the grace period ends in SIGKILL. Without a
    # jail: what stop sweeps by the job's identity is an unjailed job's (a jail's
    # processes end with its first, and print pids of its own namespace: test_jail).
    write_config(daemon.home, {"stopGraceMs": 300})
    job_id = dispatch(daemon, agent("spawns_grandchildren.py"), sandbox=False)
    wait_for(lambda: "ready" in output(daemon.home, job_id), what="the grandchildren")
    line = next(line for line in output(daemon.home, job_id).splitlines() if line.startswith("ready"))
    left_behind = [int(pid) for pid in line.split()[1:]]
    assert len(left_behind) == 4 and all(alive(pid) for pid in left_behind)
    assert set(left_behind) < set(job_processes(job_id))
    assert daemon.call("stop", id=job_id) == {"id": job_id}
    # The answer comes only once every process of the job is gone, grandchildren included.
    assert job_processes(job_id) == []
    assert not any(alive(pid) for pid in left_behind)
    item = row(daemon, job_id)
    assert item["state"] == "stopped" and item["pid"] is None and item["reaped"] is False


def test_shutdown_waits_for_the_configured_grace_before_it_leaves(clocked_daemon):
    """A job that ignores SIGTERM with a 15 s grace: the daemon kills it (SIGKILL at the
    grace's end, on the daemon's clock, which the test moves) before it leaves."""
    daemon = clocked_daemon
    write_config(daemon.home, {"stopGraceMs": 15000})
    job_id = dispatch(daemon, agent("ignores_term.py"))
    wait_for(lambda: "ignoring SIGTERM" in output(daemon.home, job_id), what="the job to ignore SIGTERM")
    assert daemon.call("shutdown") == {}
    with pytest.raises(subprocess.TimeoutExpired):
        daemon.process.wait(0.5)            # the grace has not passed: it waits
    assert job_processes(job_id)
    advance(daemon, 15_000)
    daemon.process.wait(60)
    assert job_processes(job_id) == []
    record = job_record(daemon.home, job_id)
    assert record["state"] == "stopped" and record["pid"] is None


def test_stop_of_an_ended_job_ends_what_it_left_running(daemon):
    # Popen returns once its child runs in a session of its own: nothing of the job's
    # end (the pty's hangup) reaches it.
    leave_one = ("import subprocess; subprocess.Popen(['sleep', '300'], start_new_session=True, "
                 "stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)")
    # Without a jail: in one, nothing outlives the job's first process (test_jail).
    job_id = dispatch(daemon, [PYTHON, "-c", leave_one], sandbox=False)
    wait_state(daemon, job_id, "done")
    assert job_processes(job_id)          # the sleep outlived its job
    daemon.call("stop", id=job_id)
    assert job_processes(job_id) == []
    assert row(daemon, job_id)["state"] == "done"   # its end stays what it was


def test_sigpipe_is_back_to_its_default_in_a_job(daemon):
    # With SIGPIPE ignored `yes` would end on a write error (status 1), not the signal.
    job_id = dispatch(daemon, ["bash", "-c", 'yes | head -1; echo "yes ended: ${PIPESTATUS[0]}"'])
    wait_state(daemon, job_id, "done")
    assert "yes ended: 141" in output(daemon.home, job_id)


def test_respawn_starts_an_ended_job_again_and_restart_a_live_one(daemon):
    job_id = dispatch(daemon, agent("works_a_while.py", 30, 0.2))
    first_pid = wait_row(daemon, job_id, lambda current: current["pid"])["pid"]
    assert daemon.call("respawn", id=job_id)["results"][0]["started"] is False   # it runs
    result = daemon.call("respawn", id=job_id, restart=True)
    assert result == {"results": [{"id": job_id, "started": True}]}
    second = wait_row(daemon, job_id, lambda current: current["pid"] not in (None, first_pid))
    assert second["state"] in ("working", "blocked") and not alive(first_pid)
    daemon.call("stop", id=job_id)
    other = dispatch(daemon, ["sleep", "30"])
    daemon.call("stop", id=other)
    started = daemon.call("respawn", all=True)["results"]
    assert sorted(item["id"] for item in started) == sorted([job_id, other])
    assert all(item["started"] for item in started)
    with pytest.raises(Refused) as refused:
        daemon.call("respawn")
    assert refused.value.code == "bad_request"


def test_a_job_that_keeps_dying_is_backed_off_then_left_failed(daemon):
    job_id = dispatch(daemon, agent("dies_at_once.py"))
    starts = 1
    wait_state(daemon, job_id, "failed")
    while True:
        result = daemon.call("respawn", id=job_id)["results"][0]
        if not result["started"]:
            break
        starts += 1
        wait_row(daemon, job_id, lambda current: current["state"] == "failed"
                 and job_record(daemon.home, job_id)["runs"]["quickDeaths"] == starts)
        assert starts < 10, "never held back"
    assert starts == 5
    assert "not started again" in result["error"]
    item = row(daemon, job_id)
    assert item["state"] == "failed" and item["pid"] is None
    assert "5 times in a row" in item["error"]
    # It really ran once per start, and was never started behind anyone's back.
    assert output(daemon.home, job_id).count("dying") == starts
    # An explicit restart lifts the hold.
    assert daemon.call("respawn", id=job_id, restart=True)["results"][0]["started"] is True
    wait_for(lambda: output(daemon.home, job_id).count("dying") == starts + 1, what="one more start")


def test_a_job_ends_with_its_program_though_a_child_keeps_the_terminal(daemon):
    # The child ignores the hangup its shell's exit sends, and keeps the pty open.
    # Without a jail: in one the child ends with the program (test_jail).
    job_id = dispatch(daemon, ["sh", "-c", "trap '' HUP; sleep 300 & echo started; exit 4"], sandbox=False)
    ended = wait_state(daemon, job_id, "failed")
    assert ended["error"] == "exited with status 4" and job_processes(job_id)
    # Started again while the old run's child still holds the old terminal.
    assert daemon.call("respawn", id=job_id)["results"][0]["started"] is True
    wait_for(lambda: output(daemon.home, job_id).count("started") == 2, what="the second run")
    wait_state(daemon, job_id, "failed")
    daemon.call("stop", id=job_id)
    assert job_processes(job_id) == []
