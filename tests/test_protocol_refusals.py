"""The agent protocol's refusals and its once-only guarantees, against a real daemon:
unauthorized, not_found, full, unsupported on a session's connection, malformed request
ids, resends taken once, and a reply accepted just before the daemon is killed."""

import json
import os

import pytest

from protokit import ended, reported, start, token_of, write_profiles
from roost.ops.callers import REFUSED, SESSION

HUB_OPS = sorted(op for op, refused in REFUSED.items() if refused.get(SESSION) == "unsupported"
                 and op not in ("peer_ack", "handback", "events", "concierge-order", "concierge-say",
                                "concierge-policy", "concierge-suggest", "concierge-reply", "concierge-act"))


def test_report_and_ack_refuse_a_wrong_token_and_an_unknown_job(daemon):
    job = start(daemon, "recorder")
    other = start(daemon, "recorder")
    job.wait_row(reported, "the agent's first report")
    snapshot = {"state": "working"}
    with daemon.client() as client:
        for op, extra in (("report", {"report": snapshot}), ("ack", {"seq": 1})):
            wrong = client.request(op, {"id": job.id, "token": "not-the-token", **extra})
            assert (wrong["ok"], wrong["code"]) == (False, "unauthorized"), wrong
            # Another job's token is good for that job only.
            borrowed = client.request(op, {"id": job.id, "token": token_of(daemon, other.id), **extra})
            assert borrowed["code"] == "unauthorized"
            missing = client.request(op, {"id": "no-such-job", "token": "x", **extra})
            assert missing["code"] == "not_found"
        # None of that made this connection a session: the hub's ops still work on it.
        assert client.call("list", {})["jobs"]
        assert client.call("pin", {"id": job.id, "pinned": True})["pinned"] is True
    assert job.row()["state"] == "blocked"


def test_every_hub_op_is_unsupported_on_a_sessions_connection(daemon):
    assert "dispatch" in HUB_OPS and "reply" in HUB_OPS and "shutdown" in HUB_OPS
    job = start(daemon, "recorder")
    job.wait_row(reported, "the agent's first report")
    token = token_of(daemon, job.id)
    with daemon.client() as client:
        client.call("hello", {"protocol": 1, "agent": {"name": "test"}, "capabilities": ["report"]})
        client.call("report", {"id": job.id, "token": token, "report": {"state": "working", "summary": "me"}})
        for op in HUB_OPS:
            answer = client.request(op, {"id": job.id})
            assert (answer["ok"], answer.get("code")) == (False, "unsupported"), (op, answer)
        # ... and it stays a session: a person's op is still refused after the refusals.
        assert client.request("stop", {"id": job.id})["code"] == "unsupported"
        assert client.call("ping", {})["pid"]
    assert daemon.process.poll() is None and not ended(job.row())


def test_an_agent_that_only_said_hello_is_refused_the_hub_ops_too(daemon):
    with daemon.client() as client:
        client.call("hello", {"protocol": 1})
        for op in ("dispatch", "reply", "shutdown", "subscribe"):
            assert client.request(op, {})["code"] == "unsupported", op


def test_51st_waiting_reply_is_full_and_a_command_needs_a_connected_agent(daemon):
    write_profiles(daemon)
    with open(os.path.join(daemon.home, "roost.json")) as handle:
        config = json.load(handle)
    config["agentProfiles"]["silent"] = {"command": ["sleep", "120"], "protocol": True}
    with open(os.path.join(daemon.home, "roost.json"), "w") as handle:
        json.dump(config, handle)
    job = daemon.call("dispatch", kind="shell", cwd="/", sessionFile="", command=[], env={},
                      name="silent", origin="dispatch", profile="silent")
    for n in range(50):
        answer = daemon.call("reply", id=job["id"], text=f"reply {n}")
        assert answer["saved"] is True and answer["delivered"] is False
    with daemon.client() as client:
        full = client.request("reply", {"id": job["id"], "text": "one too many"})
        assert (full["ok"], full["code"]) == (False, "full"), full
        command = client.request("reply", {"id": job["id"], "text": "/model fast"})
        assert command["ok"] is False and command["code"] == "unsupported", command
    rows = [row for row in daemon.call("list", all=True)["jobs"] if row["id"] == job["id"]]
    assert rows[0]["queued"] == 50


@pytest.mark.parametrize("bad", ["", "x" * 65, "has space", "é", "a/b", "trailing\n", 17, True])
def test_a_malformed_request_id_is_refused(daemon, bad):
    launch = {"kind": "shell", "cwd": "/", "sessionFile": "", "command": ["true"], "env": {},
              "name": "x", "origin": "dispatch", "requestId": bad}
    with daemon.client() as client:
        assert client.request("dispatch", launch)["code"] == "bad_request"
        job = client.call("dispatch", {**launch, "requestId": "ok-" + "x" * 61})
        assert client.request("reply", {"id": job["id"], "text": "hi", "requestId": bad})["code"] == "bad_request"


def test_a_reply_resent_with_its_request_id_is_taken_once(daemon):
    job = start(daemon, "recorder", task="first")
    job.wait_texts(1)
    answer = job.reply("again?", requestId="req:1.a_b-c")
    assert answer == {"delivered": True, "saved": True}
    resend = job.reply("again? (resent, other text)", requestId="req:1.a_b-c")
    assert resend == {"duplicate": True, "saved": True, "delivered": False}
    assert job.wait_texts(2) == ["first", "again?"]
    job.reply("third")
    assert job.wait_texts(3) == ["first", "again?", "third"]


def test_a_reply_accepted_just_before_a_kill_9_is_delivered_after_it_once(daemon):
    job = start(daemon, "recorder", task="hold")          # its handler waits for `release`
    job.wait_row(lambda row: row["summary"] and "hold" in row["summary"], "the handler to hold")
    answer = job.reply("accepted before the kill")
    assert answer["saved"] is True
    daemon.kill9()
    daemon.start()
    job.wait_row(lambda row: row["pid"] and not ended(row), "the job adopted")
    job.touch("release")
    assert job.wait_texts(2) == ["hold", "accepted before the kill"]
    job.wait_row(lambda row: row.get("queued", 0) == 0, "both acked")
    job.reply("exit")
    job.wait_row(ended, "the agent to leave")
    assert job.texts() == ["hold", "accepted before the kill", "exit"]
