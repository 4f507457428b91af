"""Replies to terminal agents through the daemon (issue 3 item 4 as the job ops see it):
typed at once when the agent waits, queued while it works (followUp) and typed when it
waits, steered at once, reported when not submitted, taken once per request id, and
starting an ended job again. Idle reaping (DM-4) and waking a reaped job."""

from conftest import wait_for
from jobkit import agent, dispatch, job_processes, output, row, wait_row, wait_state, write_config


def waiting(current):
    return current["state"] == "blocked" and current["status"] == "waiting"


def echo_job(daemon, work=0.1):
    job_id = dispatch(daemon, agent("prompt_echo.py", work))
    wait_row(daemon, job_id, waiting, what="the agent to wait at its prompt")
    return job_id


def test_a_reply_to_a_waiting_agent_is_typed_and_submitted(daemon):
    job_id = echo_job(daemon)
    # A command, not an agent that takes a first task: it asks a question (issue 27).
    assert row(daemon, job_id)["waitingFor"] == "question"
    answer = daemon.call("reply", id=job_id, text="hello agent", requestId="r-1")
    assert answer == {"delivered": True, "saved": False}
    wait_for(lambda: "echo: hello agent" in output(daemon.home, job_id), what="the echo")
    after = wait_row(daemon, job_id, waiting)
    assert after["waitingFor"] == "question"
    # The same request again is taken once: not typed a second time.
    assert daemon.call("reply", id=job_id, text="hello agent", requestId="r-1")["duplicate"] is True
    daemon.call("reply", id=job_id, text="second")
    wait_for(lambda: "echo: second" in output(daemon.home, job_id), what="the second echo")
    assert output(daemon.home, job_id).count("echo: hello agent") == 1


def test_a_follow_up_waits_for_the_agent_and_a_steer_does_not(daemon):
    job_id = echo_job(daemon, work=1.5)
    daemon.call("reply", id=job_id, text="first")
    wait_row(daemon, job_id, lambda current: current["state"] == "working", what="it to work")
    answer = daemon.call("reply", id=job_id, text="later")
    assert answer == {"delivered": False, "saved": True}
    assert row(daemon, job_id)["queued"] == 1
    assert "echo: later" not in output(daemon.home, job_id)
    wait_for(lambda: "echo: later" in output(daemon.home, job_id), timeout=15, what="the queued reply")
    wait_row(daemon, job_id, lambda current: current["queued"] == 0)
    # A steer goes in at once, while it works and ahead of a queued reply: the agent
    # reads it after its current line.
    wait_row(daemon, job_id, waiting, what="it to wait again")
    assert daemon.call("reply", id=job_id, text="busy again")["delivered"] is True
    wait_row(daemon, job_id, lambda current: current["state"] == "working", what="it to work")
    assert daemon.call("reply", id=job_id, text="after that") == {"delivered": False, "saved": True}
    steered = daemon.call("reply", id=job_id, text="steered", mode="steer")
    assert steered == {"delivered": True, "saved": False}
    assert row(daemon, job_id)["queued"] == 1
    wait_for(lambda: "echo: after that" in output(daemon.home, job_id), timeout=15, what="the queued one")
    text = output(daemon.home, job_id)
    assert text.index("echo: steered") < text.index("echo: after that")


def shows_its_prompt(daemon, job_id):
    """It never reads its terminal, so the kernel says it works (issue 27): only a steer
    is typed into it."""
    return "ready" in daemon.call("peek", id=job_id)["text"] and row(daemon, job_id)["state"] == "working"


def test_a_reply_the_agent_never_reads_is_reported_not_submitted(daemon):
    job_id = dispatch(daemon, agent("ignores_input.py"))
    wait_for(lambda: shows_its_prompt(daemon, job_id), what="its prompt")
    assert daemon.call("reply", id=job_id, text="not typed") == {"delivered": False, "saved": True}
    answer = daemon.call("reply", id=job_id, text="are you there", mode="steer")
    assert answer["delivered"] is False and answer["saved"] is False and answer["error"]
    assert "not submitted" in row(daemon, job_id)["error"]


def test_a_reply_to_an_ended_job_starts_it_again(daemon):
    job_id = echo_job(daemon)
    daemon.call("stop", id=job_id)
    answer = daemon.call("reply", id=job_id, text="wake up")
    assert answer["saved"] is True and answer["respawned"] is True
    wait_for(lambda: "echo: wake up" in output(daemon.home, job_id), what="the reply typed after the start")


def test_a_stop_reply_stops_the_job(daemon):
    job_id = echo_job(daemon)
    assert daemon.call("reply", id=job_id, text="/stop")["stopped"] is True
    assert row(daemon, job_id)["state"] == "stopped" and job_processes(job_id) == []


def test_an_idle_job_is_reaped_and_a_reply_wakes_it(daemon):
    write_config(daemon.home, {"reapIdleAfterMs": 300})
    job_id = echo_job(daemon)
    pinned = echo_job(daemon)
    daemon.call("pin", id=pinned, pinned=True)
    reaped = wait_state(daemon, job_id, "stopped")
    assert reaped["reaped"] is True and job_processes(job_id) == []
    answer = daemon.call("reply", id=job_id, text="back to work")
    assert answer["respawned"] is True
    wait_for(lambda: "echo: back to work" in output(daemon.home, job_id), what="the reply after waking")
    assert row(daemon, job_id)["reaped"] is False
    # The pinned one was never reaped, though it waited as long.
    assert row(daemon, pinned)["state"] == "blocked"


def test_a_child_that_never_reads_stalls_only_its_own_job(daemon):
    """A reply far larger than the pty's input buffer, to an agent that never reads: the
    write stalls, and meanwhile every other connection is served as before."""
    import threading

    job_id = dispatch(daemon, agent("ignores_input.py"))
    wait_for(lambda: shows_its_prompt(daemon, job_id), what="its prompt")
    answers = []
    stuck = threading.Thread(target=lambda: answers.append(
        daemon.call("reply", id=job_id, text="x" * (3 * 1024 * 1024), mode="steer")))
    stuck.start()
    try:
        with daemon.client(timeout=10) as other:
            for _ in range(200):
                assert other.call("ping")["pid"]
                assert other.call("list")["jobs"]
            assert not answers, "the reply should still be stuck on the full pty"
        other_job = dispatch(daemon, agent("prompt_echo.py", 0.1))
        wait_row(daemon, other_job, waiting, what="another job to run meanwhile")
    finally:
        stuck.join(120)
    assert answers and answers[0]["delivered"] is False and answers[0]["error"]


def test_the_specs_type_task_is_the_first_task_typed_once_the_agent_waits(daemon):
    """DispatchArgs.term.typeTask, as a hub or script gives it: typed, not thrown away."""
    job_id = dispatch(daemon, agent("prompt_echo.py", 0.1),
                      term={"submit": "\r", "settleMs": 200, "waiting": r"^>$", "typeTask": "first task"})
    wait_for(lambda: "echo: first task" in output(daemon.home, job_id), what="the typeTask typed")
    assert row(daemon, job_id)["task"] == "first task"
    assert output(daemon.home, job_id).count("echo: first task") == 1
