"""The feed of what happened (M43) and the hubs' pushes, against a real daemon: each
event once, with a seq that is never reused or skipped across restarts; `events` with
its cursor; `subscribe` with coalesced rows; `roost events` and `roost events -f`."""

import json
import os
import signal
import subprocess
import threading
import time

from conftest import PYTHON, wait_for
from jobkit import SlowRecordsDaemon, dispatch, job_token, wait_row, wait_state


def feed(daemon, **args):
    return daemon.call("events", **args)


def kinds_of(events, job_id):
    return [event["kind"] for event in events if event["id"] == job_id]


def test_a_jobs_life_is_in_the_feed_once_each_in_order(daemon):
    job_id = dispatch(daemon, ["sh", "-c", 'read -p "Name? " name; echo "hi $name"'], name="greeter")
    wait_row(daemon, job_id, lambda row: row["status"] == "waiting", what="the prompt")
    daemon.call("reply", id=job_id, text="Ada")
    wait_state(daemon, job_id, "done")
    daemon.call("rm", id=job_id)
    events = wait_for(lambda: (lambda found: found if "remove" in kinds_of(found, job_id) else None)(
        feed(daemon, limit=1000)["events"]), what="the removal in the feed")
    mine = [event for event in events if event["id"] == job_id]
    # (it may be seen working between the reply and its end: the screen moved meanwhile)
    told = [(event["kind"], event["text"]) for event in mine if event["text"] != "working"]
    # A command asks a question; only an agent waits for its first task (issue 27).
    assert told == [("start", "started: sh in /tmp"), ("state", "waits for an answer: Name?"), ("reply", "reply: Ada"),
                    ("state", "done: hi Ada"), ("remove", "removed")]
    assert all(event["name"] == "greeter" and event["at"] > 0 for event in mine)
    seqs = [event["seq"] for event in events]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))           # none skipped, in order
    assert feed(daemon, id=job_id)["events"] == mine                    # a removed job keeps its events
    assert feed(daemon, limit=2)["events"] == events[-2:]
    after = feed(daemon, after=seqs[1], limit=2)
    assert after["events"] == events[2:4] and after["cursor"] == seqs[3]
    assert feed(daemon, after=seqs[-1]) == {"events": [], "cursor": seqs[-1]}


def test_what_happens_while_a_row_is_written_comes_after_it_in_the_feed(home):
    daemon = SlowRecordsDaemon(home).start()
    try:
        job_id = dispatch(daemon, ["sh", "-c", 'read -p "Name? " name; echo "hi $name"'], name="greeter")
        wait_row(daemon, job_id, lambda row: row["status"] == "waiting", what="the prompt")
        daemon.call("reply", id=job_id, text="Ada")       # at once: its row is still being written
        wait_state(daemon, job_id, "done", timeout=30)
        events = wait_for(lambda: (lambda found: found if ("state", "done: hi Ada") in found else None)(
            [(event["kind"], event["text"]) for event in feed(daemon, id=job_id)["events"]]), what="its end")
        told = [entry for entry in events if entry[1] != "working"]
        assert told == [("start", "started: sh in /tmp"), ("state", "waits for an answer: Name?"),
                        ("reply", "reply: Ada"), ("state", "done: hi Ada")]
    finally:
        daemon.stop()


def test_the_cursor_resumes_exactly_after_restarts_no_seq_reused_or_skipped(daemon):
    dispatch(daemon, ["true"])
    cursor = wait_for(lambda: (lambda found: found["cursor"] if len(found["events"]) >= 3 else None)(
        feed(daemon, limit=1000)), what="a few events")
    seen = {event["seq"]: event for event in feed(daemon, limit=1000)["events"]}
    for how in ("stop", "kill9"):
        if how == "stop":
            daemon.restart()
        else:
            daemon.kill9()
            daemon.start()
        dispatch(daemon, ["true"])
        new = wait_for(lambda: (lambda found: found if len(found["events"]) >= 2 else None)(
            feed(daemon, after=cursor)), what="events after the restart")
        assert new["events"][0]["seq"] == cursor + 1
        snapshot = feed(daemon, limit=1000)
        for event in snapshot["events"]:
            assert seen.setdefault(event["seq"], event) == event        # no seq reused
        cursor = snapshot["cursor"]
    assert sorted(seen) == list(range(1, cursor + 1))                    # none skipped


def test_the_feed_keeps_the_last_1000_and_its_seqs_go_on(daemon):
    with daemon.client() as client:       # 1100 short jobs: a start and an end each (2201 lines)
        for _ in range(1100):
            client.send("dispatch", {"kind": "shell", "cwd": "/tmp", "command": ["true"], "env": {},
                                     "name": "", "sessionFile": "", "origin": "dispatch"})
        for _ in range(1100):
            client.read_message()
    wait_for(lambda: feed(daemon, limit=1)["cursor"] >= 2201 and all(
        row["state"] == "done" for row in daemon.call("list")["jobs"]), timeout=30, what="every job's end")
    kept = feed(daemon, limit=1000)["events"]
    assert len(kept) == 1000
    daemon.restart()
    wait_for(lambda: feed(daemon, limit=1)["cursor"] == kept[-1]["seq"] + 2, what="roost stopping, roost started")
    after = feed(daemon, limit=1000)["events"]
    seqs = [event["seq"] for event in after]
    assert seqs == list(range(seqs[0], seqs[0] + 1000))                 # the last 1000, none skipped
    assert [event["kind"] for event in after[-2:]] == ["daemon", "daemon"]
    assert after[:-2] == kept[2:]
    with open(os.path.join(daemon.home, "events.log"), "rb") as handle:
        assert handle.read().count(b"\n") <= 2000


def test_a_subscriber_gets_events_and_coalesced_rows(daemon):
    job_id = dispatch(daemon, ["sleep", "300"], name="busy")
    wait_row(daemon, job_id, lambda row: row["pid"] is not None, what="the job")
    token = job_token(daemon.home, job_id)
    hub = daemon.client()
    stalled = daemon.client()          # subscribes and never reads: it slows no one
    hub.call("subscribe")
    stalled.call("subscribe")
    with daemon.client() as agent:
        for number in range(200):
            agent.call("report", {"id": job_id, "token": token,
                                  "report": {"state": "working", "summary": f"step {number}"}})
    pushes = []
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        message = hub.next_event()
        pushes.append(message)
        rows = [row for push in pushes if push["event"] == "rows" for row in push["rows"] if row["id"] == job_id]
        if rows and rows[-1]["summary"] == "step 199":
            break
    row_pushes = [push for push in pushes if push["event"] == "rows"]
    assert row_pushes[-1]["rows"][-1]["summary"] == "step 199"
    assert len(row_pushes) < 50            # 200 changes, coalesced into a few pushes
    entries = [push["entry"] for push in pushes if push["event"] == "feed"]
    assert any(entry["kind"] == "state" and entry["id"] == job_id for entry in entries)
    daemon.call("rm", id=job_id)
    removed = wait_for(lambda: (lambda message: message if message["event"] == "removed" else None)(hub.next_event()),
                       what="the removal pushed")
    assert removed == {"event": "removed", "id": job_id}
    hub.close()
    stalled.close()


def test_roost_events_prints_the_feed_and_follows_it(daemon):
    job_id = dispatch(daemon, ["true"], name="first")
    wait_state(daemon, job_id, "done")
    wait_for(lambda: feed(daemon, limit=1)["events"][-1]["text"] == "done", what="its end in the feed")
    printed = daemon.cli("events", "-n", "3", "--json")
    assert printed.returncode == 0
    assert json.loads(printed.stdout) == feed(daemon, limit=3)
    assert b"first" in daemon.cli("events", "--job", "first").stdout
    follower = subprocess.Popen([PYTHON, "-m", "roost", "events", "-f", "-n", "0"], env=daemon.env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    lines = []
    reader = threading.Thread(target=lambda: lines.extend(iter(follower.stdout.readline, b"")), daemon=True)
    reader.start()
    try:
        # Until it has subscribed it prints nothing: each try is a new event for it.
        wait_for(lambda: dispatch(daemon, ["true"], name="second") and any(b"second" in line for line in lines),
                 interval=0.2, what="a new event printed as it happens")
        follower.send_signal(signal.SIGINT)
        assert follower.wait(10) == 0
        assert b"Traceback" not in follower.stderr.read()
    finally:
        follower.kill()
