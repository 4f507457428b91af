"""Jobs outlive their daemon (issue 3 item 8): kill -9 of the daemon, or shutdown with
keepWorkers, leaves every job running with its pid; the next daemon adopts them with no
output lost and the exit statuses of those that ended meanwhile; shutdown without
keepWorkers stops them all and the keeper leaves."""

import os
import signal
import time

import pytest

from conftest import wait_for
from jobkit import agent, alive, dispatch, job_processes, keeper_pid, output, row, ticks, wait_row, wait_state, write_config
from roost.unix import bwrap

JOBS = 20


def start_printers(daemon, count):
    ids = [dispatch(daemon, agent("works_a_while.py", 120, 0.02)) for _ in range(count)]
    pids = {}
    for job_id in ids:
        pids[job_id] = wait_row(daemon, job_id, lambda current: current["pid"])["pid"]
    wait_for(lambda: all(ticks(output(daemon.home, job_id)) for job_id in ids), what="every job to print")
    return ids, pids


def check_adopted(daemon, ids, pids, before):
    """Every job listed live with its pid, and its log holds every tick: the ones printed
    while no daemon read them included, with no gap."""
    listed = {item["id"]: item for item in daemon.call("list")["jobs"]}
    for job_id in ids:
        assert listed[job_id]["state"] in ("working", "blocked"), listed[job_id]
        assert listed[job_id]["pid"] == pids[job_id] and alive(pids[job_id])

    def caught_up(job_id):
        seen = ticks(output(daemon.home, job_id))
        return seen and seen[-1] > before[job_id] + 10 and seen == list(range(1, len(seen) + 1))
    for job_id in ids:
        try:
            wait_for(lambda: caught_up(job_id), what=f"job {job_id}'s log to hold every tick")
        except AssertionError as error:
            seen = ticks(output(daemon.home, job_id))
            gaps = [(a, b) for a, b in zip(seen, seen[1:]) if b != a + 1]
            raise AssertionError(f"{error}: before the outage tick {before[job_id]}, "
                                 f"now {seen[-1:]}, breaks {gaps[:5]}") from None


def test_kill_9_of_the_daemon_loses_no_job_and_no_output(daemon):
    ids, pids = start_printers(daemon, JOBS)
    ender = dispatch(daemon, ["sh", "-c", 'trap "echo ending; exit 7" USR1; while :; do sleep 0.05; done'])
    # The row's pid is its jail's outer process: the program runs under it.
    ender_pid = wait_for(lambda: bwrap.program_pid(wait_row(daemon, ender, lambda current: current["pid"])["pid"]),
                         what="the jailed program")
    keeper = keeper_pid(daemon.home)
    daemon.kill9()
    before = {job_id: ticks(output(daemon.home, job_id))[-1] for job_id in ids}
    # While no daemon runs: the jobs go on printing (into their ptys), and one ends.
    os.kill(ender_pid, signal.SIGUSR1)
    wait_for(lambda: not alive(ender_pid), what="the job that ends during the outage")
    time.sleep(0.5)   # the outage lasts a while: output piles up in the ptys meanwhile
    assert all(alive(pid) for pid in pids.values()) and alive(keeper)
    daemon.start()
    check_adopted(daemon, ids, pids, before)
    ended = wait_state(daemon, ender, "failed")
    assert ended["error"] == "exited with status 7"
    assert "ending" in output(daemon.home, ender)
    # The screen was rebuilt too: it shows a recent tick.
    peeked = daemon.call("peek", id=ids[0])["text"]
    assert any(line.startswith("tick ") for line in peeked.splitlines())
    assert keeper_pid(daemon.home) == keeper


def test_shutdown_with_keep_workers_leaves_the_jobs_for_the_next_daemon(daemon):
    ids, pids = start_printers(daemon, 3)
    daemon.call("shutdown", keepWorkers=True)
    daemon.process.wait(15)
    before = {job_id: ticks(output(daemon.home, job_id))[-1] for job_id in ids}
    time.sleep(0.3)   # output piles up while no daemon reads it
    assert all(alive(pid) for pid in pids.values())
    daemon.start()
    check_adopted(daemon, ids, pids, before)


def test_shutdown_without_keep_workers_stops_every_job_and_the_keeper(daemon):
    ids, pids = start_printers(daemon, 3)
    keeper = keeper_pid(daemon.home)
    daemon.call("shutdown")
    daemon.process.wait(30)
    for job_id in ids:
        assert job_processes(job_id) == []
    wait_for(lambda: not alive(keeper), what="the keeper to leave")
    daemon.start()
    for job_id in ids:
        assert row(daemon, job_id)["state"] == "stopped"


def test_a_keeper_that_dies_is_replaced_and_its_jobs_still_end(daemon):
    old = dispatch(daemon, agent("works_a_while.py", 1.5, 0.05, 3))
    wait_for(lambda: ticks(output(daemon.home, old)), what="the first job to print")
    first_keeper = keeper_pid(daemon.home)
    os.kill(first_keeper, signal.SIGKILL)
    wait_for(lambda: daemon.call("status")["ptyError"], what="the daemon to notice")
    new = dispatch(daemon, ["sh", "-c", "echo fresh"])
    assert wait_state(daemon, new, "done")["summary"] == "fresh"
    assert keeper_pid(daemon.home) != first_keeper
    # The old job ran on without its keeper; its end comes from its terminal.
    ended = wait_state(daemon, old, "done", "failed")
    assert "worked" in output(daemon.home, old)
    assert ended["pid"] is None


@pytest.mark.parametrize("argv", [["sleep", "300"], ["sh", "-c", "trap '' TERM; sleep 300 & wait"]],
                         ids=["ends-on-sigterm", "ignores-sigterm"])
def test_a_job_started_but_never_recorded_is_ended_by_the_next_daemon(daemon, argv):
    # As if the daemon died between the keeper's spawn and writing the job's record:
    # the keeper holds a job that no record claims.
    from keeperkit import KeeperConnection, as_the_daemon
    from roost.keeper import admission
    from roost.keeper import wire as keeper_wire

    dispatch(daemon, ["true"])            # a keeper runs
    daemon.kill9()
    os.mkdir(os.path.join(daemon.home, "jobs", "0dd0b0e5"), 0o700)
    write_config(daemon.home, {"stopGraceMs": 300})
    with as_the_daemon(daemon.home):      # the dead daemon's lock and secret, as its last act
        keeper = KeeperConnection(keeper_wire.socket_path(daemon.home), admission.read_secret(daemon.home))
        answer, fds = keeper.call("spawn", job="0dd0b0e5", argv=argv, env={"PATH": os.environ["PATH"]},
                                  cwd="/", rows=24, cols=80, umask=0o022)
        os.close(fds[0])
        keeper.close()
    assert alive(answer["pid"])
    daemon.start()
    wait_for(lambda: not alive(answer["pid"]), what="the unclaimed job to end")
    wait_for(lambda: not os.path.exists(os.path.join(daemon.home, "jobs", "0dd0b0e5")),
             what="its directory to be removed")
    assert "0dd0b0e5" not in {item["id"] for item in daemon.call("list", all=True)["jobs"]}
