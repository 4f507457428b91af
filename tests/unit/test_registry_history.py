"""A job's run and row (roost.jobs.run, roost.jobs.registry), replayed: the moves and
changes the runner and the agent make, in; the rows each hook hears, their times from the
injected clock, and the refusals, out."""

import pytest

from kit import registry
from roost.errors import RoostError


def heard(jobs):
    rows = []
    jobs.on_row_change.append(lambda after, before: rows.append((after["state"], after["stateSince"])))
    return rows


def test_a_run_from_start_to_end_with_the_agents_states_between(tmp_path):
    jobs, clock, feed = registry(tmp_path)
    rows = heard(jobs)
    job = jobs.create({"name": "a", "cwd": "/tmp"}, {"argv": ["agent"]})
    start = clock.now_ms()
    jobs.move(job, "starting", state="working")
    clock.advance(100)
    jobs.move(job, "running", pid=7)
    clock.advance(5_000)
    jobs.change(job, state="blocked", status="waiting", waitingFor="question")
    clock.advance(60_000)
    jobs.change(job, state="working", status=None, waitingFor=None)
    clock.advance(1_000)
    jobs.move(job, "stopping")
    jobs.move(job, "ended", state="stopped", endedAt=clock.now_ms())
    # a move without fields (stopping) changes no row: nothing is told
    assert [state for state, _ in rows] == ["working", "working", "blocked", "working", "stopped"]
    # stateSince moves only when the state does, at the clock's time
    assert [since for _, since in rows] == [start, start, start + 5_100, start + 65_100, start + 66_100]
    assert job.run.phase == "ended" and job.run.ended.is_set()
    assert [event["state"] for event in feed.events if event["kind"] == "state"][-1] == "stopped"


@pytest.mark.parametrize("moves, refused", [
    (["running"], "running"),                         # never started
    (["starting", "stopping"], "stopping"),           # a start is not stopped, it ends
    (["starting", "running", "starting"], "starting"),
])
def test_a_move_the_table_does_not_allow_is_refused_and_changes_nothing(tmp_path, moves, refused):
    jobs, _, _ = registry(tmp_path)
    job = jobs.create({"name": "a", "cwd": "/tmp"}, {"argv": ["agent"]})
    for phase in moves[:-1]:
        jobs.move(job, phase, **({"state": "working"} if phase == "starting" else {}))
    before = (job.run.phase, job.row())
    with pytest.raises(RoostError) as raised:
        jobs.move(job, refused)
    assert raised.value.code == "conflict" and (job.run.phase, job.row()) == before


def test_an_ended_run_takes_only_an_end_state_and_a_live_one_only_an_agents(tmp_path):
    jobs, _, _ = registry(tmp_path)
    job = jobs.create({"name": "a", "cwd": "/tmp"}, {"argv": ["agent"]})
    jobs.move(job, "starting", state="working")
    jobs.move(job, "running", pid=7)
    with pytest.raises(RoostError):
        jobs.change(job, state="stopped")
    jobs.move(job, "ended", state="done")
    with pytest.raises(RoostError):
        jobs.change(job, state="blocked")
    assert job.state == "done"
