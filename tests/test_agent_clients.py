"""The agent protocol's conformance scenarios, one list for every client roost ships: the
Python one (roost_agent.py, run by tests/agents/proto_*.py) and the TypeScript one
(clients/typescript/src/roost-agent.ts, run by clients/typescript/test/recorder.ts), each
a protocol job from a profile against the real daemon. Through the relay (protokit) the
test sees every line the agent sends. What only one client has (the Python one's examples
and board helpers, the TypeScript one's peer items and calls) stays in its own file:
tests/test_agent_protocol.py, tests/test_typescript_client.py."""

import json
import os

import pytest

import protokit
import tskit
from conftest import wait_for
from protokit import acked_seqs, ended, relay, through  # noqa: F401 (a fixture)
from tskit import compiled  # noqa: F401 (a fixture)


class Client:
    """One client's fake agents, by what they do: `recorder` records each reply it
    handles, `crasher` dies in the handler of `boom`, `no-close` ends without close()."""

    def __init__(self, start, profiles):
        self._start = start
        self.profiles = profiles

    def start(self, daemon, kind="recorder", task=None, env=None):
        return self._start(daemon, self.profiles[kind], task=task, env=env)


CLIENTS = {
    "python": Client(protokit.start, {"recorder": "recorder", "crasher": "crasher", "no-close": "no-close"}),
    "typescript": Client(tskit.start, {"recorder": "ts", "crasher": "ts-crasher", "no-close": "ts-no-close"}),
}


@pytest.fixture(params=sorted(CLIENTS))
def client(request):
    if request.param == "typescript":
        if tskit.NODE is None:
            pytest.skip("node is not installed: the TypeScript client needs it")
        request.getfixturevalue("compiled")
    return CLIENTS[request.param]


def test_the_first_report_connects_saying_hello_first_and_sets_the_row(client, daemon, relay):
    job = client.start(daemon, env=through(relay))
    row = job.wait_row(lambda row: row["summary"] == "ready", "the agent's first report")
    assert (row["state"], row["status"]) == ("blocked", "waiting")
    assert row["waitingFor"] == "first-prompt"   # blocked, no question, nothing handed over yet
    assert row["capabilities"] == ["report", "replies"]
    first, second = relay.ops(connection=1)[:2]
    assert first["op"] == "hello"
    assert first["args"] == {"protocol": 1, "agent": {"name": "proto-recorder", "version": "1"},
                             "capabilities": ["report", "replies"]}
    assert second["op"] == "report" and second["args"]["id"] == job.id
    report = second["args"]["report"]
    assert set(report) >= {"state", "status", "waitingFor", "summary", "question", "choices", "tool",
                           "error", "name", "model"}   # the spec's WorkerReport, by its names
    for field in ("question", "tool", "error", "name", "model"):
        assert report[field] is None    # a full snapshot: what is not given is null
    assert report["choices"] == []
    assert "agentItems" not in report   # it takes no peer items
    answer = wait_for(lambda: [message for number, message in relay.received
                               if number == 1 and message.get("id") == first["id"]], what="the hello answer")
    assert answer[0]["ok"] is True and answer[0]["result"]["protocol"] == 1
    assert job.stdio() == ""


def replies_in_order(job):
    """The task is reply 1 and the replies come in order, once each, to one process."""
    job.wait_texts(1)
    for text in ("two", "three", "four"):
        job.reply(text)
    assert job.wait_texts(4) == ["first task", "two", "three", "four"]
    assert [entry["seq"] for entry in job.handled()] == [1, 2, 3, 4]
    assert len({entry["run"] for entry in job.handled()}) == 1
    job.wait_row(lambda row: row.get("queued", 0) == 0 and row["summary"] == "handled 4: four", "every reply acked")
    assert job.row()["waitingFor"] is None   # blocked after its first reply: waits for the next
    assert job.progress()["lastSeq"] == 4 and job.progress()["version"] == 1
    job.reply("steered", mode="steer")
    job.wait_texts(5)
    assert job.handled()[-1]["mode"] == "steer" and job.handled()[0]["mode"] == "followUp"
    assert job.stdio() == ""


def test_the_task_is_reply_1_and_replies_come_in_order_once_each(client, daemon):
    replies_in_order(client.start(daemon, task="first task"))


@pytest.mark.parametrize("python", protokit.interpreters()[1:])
def test_replies_come_in_order_under_each_older_python(daemon, python):
    """roost_agent.py keeps Python 3.8 working: the same under each older Python found here."""
    replies_in_order(protokit.start(daemon, "recorder", task="first task", python=python))


def test_an_ack_follows_the_handler_and_the_write_of_agent_json(client, daemon, relay):
    job = client.start(daemon, env=through(relay))
    job.wait_row(lambda row: row["summary"] == "ready", "the first report")
    seen_at_ack = []
    relay.on_sent = lambda message: seen_at_ack.append((message["args"]["seq"], job.progress()["lastSeq"])) \
        if message.get("op") == "ack" else None
    job.reply("one")
    job.reply("hold")
    job.reply("three")
    wait_for(lambda: job.row()["summary"] == "handling: hold", what="the handler of 'hold' to run")
    assert acked_seqs(relay) == {1}   # 2 runs, 3 waits: neither is acked
    assert job.row().get("queued") == 2
    assert job.texts() == ["one"]
    job.touch("release")
    wait_for(lambda: acked_seqs(relay) == {1, 2, 3}, what="acks 2 and 3")
    assert seen_at_ack and all(seq <= last for seq, last in seen_at_ack)   # agent.json had it first
    assert all("exact" not in ack["args"] for ack in relay.ops("ack"))     # a user reply's ack covers those before
    assert job.texts() == ["one", "hold", "three"]
    delivered = [message["seq"] for _, message in relay.received if message.get("event") == "deliver"]
    assert sorted(set(delivered)) == [1, 2, 3]   # a seq sent twice is handed over once
    assert job.stdio() == ""


def test_a_lost_connection_is_made_again_with_hello_and_the_latest_report(client, daemon, relay):
    job = client.start(daemon, env=through(relay))
    job.reply("one")
    job.wait_row(lambda row: row["summary"] == "handled 1: one", "the first reply handled")
    relay.drop_all()
    wait_for(lambda: len(relay.ops("report", connection=2)) >= 1, what="a report on a new connection")
    hello, report = relay.ops(connection=2)[:2]
    assert hello["op"] == "hello" and report["op"] == "report"
    assert report["args"]["report"]["summary"] == "handled 1: one"   # the latest, sent again
    job.reply("two")
    assert job.wait_texts(2) == ["one", "two"]
    job.wait_row(lambda row: row.get("queued", 0) == 0, "the reply acked")
    assert job.stdio() == ""


def test_started_again_it_only_acks_what_it_had_finished(client, daemon, relay):
    # The acks of "one" and "two" are lost on the way, then the agent dies in the handler
    # of "boom": the daemon still holds all three. Started again, the agent hands over only
    # "boom" (agent.json says the others were finished).
    relay.hold = lambda message: message.get("op") == "ack"
    job = client.start(daemon, "crasher", task="one", env=through(relay))
    job.reply("two")
    job.wait_texts(2)
    wait_for(lambda: acked_seqs(relay) == {1, 2}, what="the two acks, lost")
    job.reply("boom")
    row = job.wait_row(ended, "the agent to die in its handler")
    assert row["state"] == "failed" and row.get("queued") == 3
    assert job.progress()["lastSeq"] == 2
    relay.hold = lambda message: False
    daemon.call("respawn", id=job.id)
    assert job.wait_texts(3) == ["one", "two", "boom"]
    job.wait_row(lambda row: row.get("queued", 0) == 0, "every reply acked")
    # Now only finished replies wait: the next start must ack them without a new one.
    relay.hold = lambda message: message.get("op") == "ack"
    job.reply("four")
    job.wait_texts(4)
    wait_for(lambda: relay.ops("ack")[-1]["args"]["seq"] == 4, what="the ack of 'four', lost")
    daemon.call("stop", id=job.id)
    job.wait_row(ended, "the job to stop")
    relay.hold = lambda message: False
    daemon.call("respawn", id=job.id)
    job.wait_row(lambda row: row.get("queued", 0) == 0 and not ended(row), "'four' acked, not handed over")
    assert job.texts() == ["one", "two", "boom", "four"]
    assert len({entry["run"] for entry in job.handled()}) == 2
    assert job.stdio() == ""


@pytest.mark.parametrize("finishes", [True, False], ids=["finishes-in-time", "finishes-after-close"])
def test_close_acks_a_running_reply_only_if_it_finishes_first(client, daemon, relay, finishes):
    job = client.start(daemon, env=through(relay))
    job.reply("hold")
    wait_for(lambda: job.row()["summary"] == "handling: hold", what="the handler to run")
    job.touch("close-now", "10" if finishes else "0.3")
    wait_for(lambda: os.path.exists(os.path.join(job.dir, "closing" if finishes else "closed")),
             what="close() to be called" if finishes else "close() to return")
    job.touch("release")
    job.wait_row(ended, "the agent to exit")
    assert acked_seqs(relay) == ({1} if finishes else set())
    assert job.texts() == ["hold"]
    assert job.progress()["lastSeq"] == 1   # finished either way
    if not finishes:
        # Not acked, it comes again on the next start, which only acks it.
        assert job.row().get("queued") == 1
        os.unlink(os.path.join(job.dir, "close-now"))   # the next start runs until it is stopped
        daemon.call("respawn", id=job.id)
        job.wait_row(lambda row: row.get("queued", 0) == 0, "the reply acked after the new start")
        assert job.texts() == ["hold"]
    assert job.stdio() == ""


def test_a_wrong_token_stops_the_agent_without_a_retry_loop(client, daemon, relay):
    job = client.start(daemon, env={**through(relay), "PROTO_TOKEN": "not-the-token"})
    job.wait_row(ended, "the agent to give up")
    with open(os.path.join(job.dir, "refused.json")) as handle:
        assert json.load(handle) == {"code": "unauthorized"}
    assert len(relay.ops("report")) == 1
    assert relay.connections == 1
    assert job.stdio() == ""


@pytest.mark.parametrize("how", ["kill-9", "shutdown-keep-workers"])
def test_the_agent_comes_back_after_a_daemon_restart(client, daemon, relay, how):
    job = client.start(daemon, task="before", env=through(relay))
    job.wait_row(lambda row: row["summary"] == "handled 1: before", "the task handled")
    pid = job.row()["pid"]
    if how == "kill-9":
        daemon.kill9()
    else:
        daemon.call("shutdown", keepWorkers=True)
        daemon.process.wait(15)
    daemon.start()
    wait_for(lambda: relay.connections >= 2 and relay.ops("report", connection=relay.connections),
             what="the agent to report on a new connection")
    latest = relay.ops(connection=relay.connections)
    assert [message["op"] for message in latest[:2]] == ["hello", "report"]
    assert latest[1]["args"]["report"]["summary"] == "handled 1: before"
    job.reply("after")
    assert job.wait_texts(2) == ["before", "after"]
    assert job.row()["pid"] == pid
    job.wait_row(lambda row: row.get("queued", 0) == 0, "the reply acked")
    assert job.texts() == ["before", "after"]   # once each
    assert job.stdio() == ""


def test_its_exit_ends_the_row(client, daemon):
    job = client.start(daemon, task="exit")
    row = job.wait_row(ended, "the job to end")
    assert (row["state"], row["summary"]) == ("done", "bye")
    assert row.get("queued", 0) == 0   # close() waited for the ack of "exit"
    assert job.stdio() == ""


def test_an_agent_that_ends_without_close_still_gets_its_last_report_through(client, daemon):
    job = client.start(daemon, "no-close")
    row = job.wait_row(ended, "the agent to end")
    assert (row["state"], row["summary"]) == ("done", "finished without close()")
