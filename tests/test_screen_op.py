"""`screen` (issue 30): a job's screen as rows of text from the daemon's own screen
model, then only the rows that changed; `screen-stop`; an ended job's screen from its
log. A watch is not an attacher: the job's terminal queries are still answered. And
`notify later`, the page's Not now: the wait is told again as a reminder."""

import time

from conftest import wait_for
from jobkit import agent, dispatch, wait_row


def frames(client, job_id, until, timeout=10):
    """The screen pushes for `job_id` until `until(frames)` holds."""
    got = []
    deadline = time.monotonic() + timeout
    client.sock.settimeout(timeout)
    while not until(got):
        assert time.monotonic() < deadline, f"no such frames: {got}"
        message = client.next_event()
        if message.get("event") == "screen" and message.get("id") == job_id:
            got.append(message)
    return got


def test_a_watch_gets_the_screen_then_only_the_rows_that_changed(daemon):
    job_id = dispatch(daemon, agent("prompt_echo.py", "0"))
    wait_row(daemon, job_id, lambda row: row["waitingFor"], what="the prompt")
    with daemon.client() as watcher:
        first = watcher.call("screen", {"id": job_id})
        assert first["ended"] is False and first["lines"][0] == ">" and len(first["lines"]) == first["rows"]
        daemon.call("reply", id=job_id, text="hello there")
        got = frames(watcher, job_id, lambda got: any("hello there" in text for frame in got
                                                       for text in frame["lines"].values()))
        # Only the rows that changed: never the whole screen again.
        assert all(len(frame["lines"]) < first["rows"] for frame in got)
        assert all(set(frame) >= {"lines", "cursor", "rows", "cols"} for frame in got)
        watcher.call("screen-stop", {"id": job_id})
        daemon.call("reply", id=job_id, text="after the stop")
        wait_for(lambda: "after the stop" in daemon.call("peek", id=job_id)["text"], what="the second echo")
        watcher.call("ping")       # any push after the stop would be queued before this answer
        assert not [message for message in watcher.pending_events if message.get("event") == "screen"]


def test_an_ended_jobs_screen_is_read_from_its_log(daemon):
    job_id = dispatch(daemon, ["sh", "-c", "echo the last words"])
    wait_row(daemon, job_id, lambda row: row["state"] in ("done", "failed"), what="its end")
    with daemon.client() as watcher:
        answer = watcher.call("screen", {"id": job_id})
    assert answer["ended"] is True and "the last words" in answer["lines"]


def test_a_watch_ends_with_the_job(daemon):
    job_id = dispatch(daemon, ["sh", "-c", "read line; echo bye $line"])
    wait_row(daemon, job_id, lambda row: row["waitingFor"], what="the read")
    with daemon.client() as watcher:
        watcher.call("screen", {"id": job_id})
        daemon.call("keys", id=job_id, keys=["x", "Enter"])
        got = frames(watcher, job_id, lambda got: any(frame.get("ended") for frame in got))
    assert any("bye x" in text for frame in got for text in (frame.get("lines") or {}).values())


def test_a_watched_jobs_queries_are_still_answered(daemon):
    """An attacher's own terminal answers the job's queries (the daemon stops answering
    them); a watch has no terminal, so the daemon goes on answering."""
    job_id = dispatch(daemon, ["sh", "-c", f"sleep 0.5; exec {' '.join(agent('query_terminal.py'))}"])
    with daemon.client() as watcher:
        watcher.call("screen", {"id": job_id})
        wait_for(lambda: "cursor at row" in daemon.call("peek", id=job_id)["text"], timeout=10,
                 what="the agent's prompt, shown once its cursor query was answered")


def test_not_now_tells_the_wait_again_as_a_reminder(daemon):
    job_id = dispatch(daemon, agent("asks_question.py"))
    wait_row(daemon, job_id, lambda row: row["waitingFor"], what="the question")
    with daemon.client() as hub:
        hub.call("subscribe")
        answer = hub.call("notify", {"action": "later", "id": job_id, "minutes": 0.02})
        assert answer["until"] > 0
        deadline = time.monotonic() + 15
        while True:
            assert time.monotonic() < deadline, "no reminder came"
            message = hub.next_event()
            note = message.get("note") or {}
            if message.get("event") == "notify" and note.get("id") == job_id and note.get("reminder"):
                break
    assert note["title"].endswith("(still waiting)")


def test_not_now_is_a_persons_and_needs_a_time(daemon):
    job_id = dispatch(daemon, agent("asks_question.py"))
    with daemon.client() as client:
        refused = client.request("notify", {"action": "later", "id": job_id, "minutes": 0})
    assert refused["code"] == "bad_request"
