"""roost_agent.py against the real daemon: agents built on it (tests/agents/proto_*.py and
examples/) run as protocol jobs from a profile, and the test watches what they say. The
conformance scenarios it shares with the TypeScript client are one list
(tests/test_agent_clients.py); here what only this client has: its requests and board
helpers, the examples, an agent that said done.

To see the wire, an agent may be pointed (through its launch env) at a relay: a plain
pipe to the real daemon's socket that records each line the agent sends, and can drop
every connection, hold back a request or lose an ack on the way. The daemon answers
everything itself.
"""

import json
import os
import subprocess

import pytest

from conftest import PYTHON, wait_for
from protokit import EXAMPLES, RECORDER, ProtoJob, Relay, acked_seqs, ended, relay, start, through, write_profiles  # noqa: F401 (a fixture)


def test_requests_answer_refuse_and_time_out(daemon, relay):
    job = start(daemon, "recorder", env=through(relay))
    job.wait_row(lambda row: row["summary"] == "ready", "the first report")
    job.reply("op resolve 5 {\"query\": \"%s\"}" % job.id)
    job.reply("op resolve 5 {\"query\": \"no-such-job\"}")
    job.reply("op dispatch 5 {}")   # a hub op, on the job's own connection
    relay.hold = lambda message: message.get("op") == "ping"
    job.reply("op ping 0.3 {}")
    job.wait_texts(4)
    calls = [entry["call"] for entry in job.handled()]
    assert calls[0]["result"]["id"] == job.id
    assert calls[1:] == [{"code": "not_found"}, {"code": "unsupported"}, {"code": "timeout"}]
    job.reply("op ping 30 {}")
    wait_for(lambda: len(relay.ops("ping")) == 2, what="the second ping to be on its way")
    relay.drop_all()
    job.wait_texts(5)
    assert job.handled()[4]["call"] == {"code": "disconnected"}
    relay.hold = lambda message: False
    job.reply("op ping 5 {}")
    job.wait_texts(6)
    assert set(job.handled()[5]["call"]["result"]) >= {"pid", "version"}
    assert job.stdio() == ""


def test_the_board_helpers(daemon):
    job = start(daemon, "recorder")
    job.reply("add write the docs")
    added = job.wait_texts(1) and job.handled()[0]["call"]["task"]
    assert added["title"] == "write the docs" and added["state"] == "open"
    job.reply("claim %d" % added["id"])
    job.reply("claim 999999")
    job.reply("tasks")
    job.wait_texts(4)
    calls = [entry["call"] for entry in job.handled()]
    assert calls[1]["task"]["state"] == "claimed"
    assert calls[2] == {"code": "not_found"}
    assert calls[3] == {"titles": ["write the docs"]}
    assert job.stdio() == ""


def said_done(row):
    return row["state"] == "done" and row["pid"] is not None


def test_after_done_the_agents_question_still_reaches_its_row(daemon):
    """A turn that finished (`done`, the agent still running), then a question: the
    agent's reports set the row, whatever state it said before."""
    job = start(daemon, "recorder", task="say done")
    job.wait_row(said_done, "the agent to say done and run on")
    job.reply("say blocked Which file?")
    row = job.wait_row(lambda row: row["state"] == "blocked", "the question to reach the row")
    assert (row["question"], row["choices"], row["summary"]) == ("Which file?", ["yes", "no"], "said blocked")
    job.reply("say working")
    assert job.wait_row(lambda row: row["state"] == "working", "working again")["question"] is None


@pytest.mark.parametrize("how", ["stop", "/stop"])
def test_an_agent_that_said_done_and_is_stopped_ends_stopped(daemon, how):
    job = start(daemon, "recorder", task="say done")
    job.wait_row(said_done, "the agent to say done and run on")
    if how == "stop":
        daemon.call("stop", id=job.id)
    else:
        assert daemon.call("reply", id=job.id, text="/stop")["stopped"] is True
    row = job.wait_row(ended, "the job to end")
    assert row["state"] == "stopped" and row["pid"] is None


def test_the_echo_example_answers_each_reply(daemon):
    job = start(daemon, "echo", task="hello")
    job.wait_row(lambda row: row["summary"] == "echo: hello", "the task echoed")
    job.reply("and this")
    job.wait_row(lambda row: row["summary"] == "echo: and this" and row["waitingFor"] is None, "the reply echoed")
    job.reply("bye")
    assert job.wait_row(ended, "the echo agent to end")["state"] == "done"


def test_the_ask_example_acts_on_the_answer(daemon, tmp_path):
    job = start(daemon, "ask", cwd=str(tmp_path))
    row = job.wait_row(lambda row: row["question"] == "Which greeting should I write?", "the question")
    assert row["choices"] == ["hello", "good morning", "nothing"] and row["waitingFor"] == "question"
    job.reply("what?")
    job.wait_row(lambda row: "not one of the choices" in (row["summary"] or ""), "the question asked again")
    job.reply("2")
    assert job.wait_row(ended, "the ask agent to end")["state"] == "done"
    with open(tmp_path / "greeting.txt", encoding="utf-8") as handle:
        assert handle.read() == "good morning\n"
    assert "good morning" in job.row()["summary"]


def test_the_lead_example_hands_its_task_to_the_helper_and_waits_for_it(daemon):
    helper = start(daemon, "helper")
    daemon.call("rename", id=helper.id, name="helper")
    helper.wait_row(lambda row: "agent-items" in (row.get("capabilities") or []), "the helper's hello")
    lead = start(daemon, "lead", task="write the release notes")
    row = lead.wait_row(lambda row: row["state"] == "done", "the lead done")
    assert row["summary"] == "helper: did: write the release notes"
    wait_for(lambda: {"message", "notice"} <= {event["kind"] for event in
                                                daemon.call("events", id=lead.id, limit=100)["events"]},
             what="the message and the notice in the feed")


def test_the_examples_run_harmlessly_outside_roost():
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("ROOST_", "PI_JOB", "PI_DAEMON"))}
    for name in ("echo_agent.py", "ask_agent.py", "helper_agent.py", "lead_agent.py"):
        out = subprocess.run([PYTHON, os.path.join(EXAMPLES, name)], env=env, capture_output=True, timeout=30)
        assert out.returncode == 0 and out.stderr == b""
        assert out.stdout.count(b"\n") == 1 and b"not inside a roost job" in out.stdout


def test_a_job_started_as_a_command_whose_agent_reports_takes_its_replies_over_the_protocol(daemon):
    """`roost run -- my-agent` with no profile: once its agent reports, it speaks the
    protocol, so its replies are delivered (and acked), not typed into its terminal."""
    write_profiles(daemon)
    launch = {"kind": "shell", "cwd": os.path.dirname(daemon.home), "sessionFile": "", "env": {},
              "command": [PYTHON, RECORDER], "name": "plain", "origin": "dispatch"}
    job = ProtoJob(daemon, daemon.call("dispatch", **launch)["id"])
    job.wait_row(lambda row: row.get("capabilities") is not None, "its first report")
    job.reply("over the protocol")
    assert job.wait_texts(1) == ["over the protocol"]
    job.wait_row(lambda row: row["queued"] == 0, "the reply acked")
