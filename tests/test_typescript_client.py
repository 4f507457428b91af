"""The TypeScript client (clients/typescript/src/roost-agent.ts) against the real daemon:
the conformance test of the spec, as test_agent_protocol.py is for roost_agent.py.

A scripted agent on the client (clients/typescript/test/recorder.ts, compiled once per
session with the package's pinned tsc) runs as a protocol job from a profile; the test
watches its rows, its records, and, through the relay of test_agent_protocol.py, every line
it sends. Needs node and `scripts/setup` (which installs the package's dev dependencies).
"""

import json
import os
import re
import shutil
import subprocess

import pytest

from conftest import ROOT, wait_for
from test_agent_protocol import ProtoJob, Relay, acked_seqs, ended, through

PACKAGE = os.path.join(ROOT, "clients", "typescript")
NODE = shutil.which("node")
RECORDER = os.path.join(PACKAGE, "dist", "test", "recorder.js")
CLIENT_JS = os.path.join(PACKAGE, "dist", "src", "roost-agent.js")

pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed: the TypeScript client needs it")


@pytest.fixture(scope="session")
def compiled():
    """The client and its test agent compiled (tsc also checks the types)."""
    tsc = os.path.join(PACKAGE, "node_modules", ".bin", "tsc")
    if not os.path.exists(tsc):
        pytest.fail(f"{tsc} is missing: run scripts/setup (it installs the TypeScript client's dev dependencies)")
    built = subprocess.run([tsc, "-p", PACKAGE], capture_output=True, text=True, timeout=180)
    assert built.returncode == 0, f"tsc failed:\n{built.stdout}{built.stderr}"
    return RECORDER


@pytest.fixture
def relay(daemon):
    relay = Relay(os.path.join(os.path.dirname(daemon.home), "relay.sock"), daemon.socket)
    yield relay
    relay.close()


def command(*args):
    # The agent's own stdout and stderr go to stdio.txt: the client must write nothing.
    return ["sh", "-c", 'exec "$0" "$@" >>"$ROOST_JOB_DIR/stdio.txt" 2>&1', NODE, RECORDER, *args]


PROFILES = {
    "ts": {"command": command(), "task": "type", "protocol": True},
    "ts-crasher": {"command": command("--crash-on", "boom"), "task": "type", "protocol": True},
    "ts-messages": {"command": command("--messages"), "task": "type", "protocol": True},
    "ts-no-close": {"command": command("--no-close"), "protocol": True},
}


def start(daemon, profile="ts", task=None, env=None):
    with open(os.path.join(daemon.home, "roost.json"), "w", encoding="utf-8") as handle:
        json.dump({"agentProfiles": PROFILES}, handle)
    launch = {"kind": "shell", "cwd": os.path.dirname(daemon.home), "sessionFile": "", "command": [],
              "env": {"PROTO_LOG": os.path.join(os.path.dirname(daemon.home), "client.log"), **(env or {})},
              "name": profile, "origin": "dispatch", "profile": profile}
    if task is not None:
        launch["task"] = task
    return TsJob(daemon, daemon.call("dispatch", **launch)["id"])


class TsJob(ProtoJob):
    def stdio(self):
        try:
            return super().stdio()
        except FileNotFoundError:
            return ""


def test_the_first_report_connects_saying_hello_first_and_sets_the_row(compiled, daemon, relay):
    job = start(daemon, env=through(relay))
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
    for field in ("question", "tool", "error", "name", "model", "thinking", "context", "usage"):
        assert report[field] is None    # a full snapshot: what is not given is null
    assert report["choices"] == []
    assert "agentItems" not in report   # it takes no peer items
    answer = wait_for(lambda: [message for number, message in relay.received
                               if number == 1 and message.get("id") == first["id"]], what="the hello answer")
    assert answer[0]["ok"] is True and answer[0]["result"]["protocol"] == 1
    assert job.stdio() == ""


def test_the_task_is_reply_1_and_replies_come_in_order_once_each(compiled, daemon):
    job = start(daemon, task="first task")
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


def test_an_ack_follows_the_handler_and_the_write_of_agent_json(compiled, daemon, relay):
    job = start(daemon, env=through(relay))
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
    assert sorted(set(delivered)) == [1, 2, 3]
    assert job.stdio() == ""


def test_a_seq_delivered_again_is_dropped_and_acked_again(compiled, daemon, relay):
    job = start(daemon, task="one", env=through(relay))
    job.wait_row(lambda row: row["summary"] == "handled 1: one" and row.get("queued", 0) == 0, "the task acked")
    acks = len(relay.ops("ack"))
    inject(relay, {"event": "deliver", "id": job.id, "seq": 1, "text": "one, sent again"})
    wait_for(lambda: len(relay.ops("ack")) > acks, what="the resent seq acked again")
    assert relay.ops("ack")[-1]["args"]["seq"] == 1
    # Another job's delivery (a wrong id) is not this agent's.
    inject(relay, {"event": "deliver", "id": "someone-else", "seq": 7, "text": "not mine"})
    job.reply("two")
    assert job.wait_texts(2) == ["one", "two"]
    assert job.stdio() == ""


def test_peer_items_go_to_on_message_each_acked_exactly(compiled, daemon, relay):
    job = start(daemon, "ts-messages", env=through(relay))
    row = job.wait_row(lambda row: row["summary"] == "ready", "the first report")
    assert row["capabilities"] == ["report", "replies", "agent-items", "peers"]
    assert relay.ops("report")[0]["args"]["report"]["agentItems"] is True
    # The daemon has no peers yet to send items: the relay hands the agent two, as the
    # daemon would, between the user's replies.
    job.reply("one")
    job.wait_texts(1)
    item = {"event": "deliver", "id": job.id, "seq": 40, "text": "from a peer", "kind": "message",
            "from": "other", "relation": "sibling"}
    inject(relay, item)
    wait_for(lambda: len(job.handled()) == 2, what="the item handled")
    inject(relay, item)   # sent again: acked again, not handed over again
    inject(relay, {**item, "seq": 41, "kind": "notice", "text": "a watch fired"})
    wait_for(lambda: [a["args"] for a in relay.ops("ack") if a["args"].get("exact")] ==
             [{"id": job.id, "token": item_token(relay), "seq": 40, "exact": True}] * 2 +
             [{"id": job.id, "token": item_token(relay), "seq": 41, "exact": True}],
             what="each item acked by itself, exactly")
    handled = job.handled()
    assert [(entry["seq"], entry["kind"]) for entry in handled] == [(1, None), (40, "message"), (41, "notice")]
    assert handled[1]["from"] == "other" and handled[1]["relation"] == "sibling"
    assert job.progress()["itemSeqs"] == [40, 41] and job.progress()["lastSeq"] == 1
    job.reply("two")
    assert job.wait_texts(4)[-1] == "two"
    assert job.stdio() == ""


def item_token(relay):
    return relay.ops("report")[0]["args"]["token"]


def inject(relay, event):
    """Send `event` to the agent on its latest connection, as if the daemon had."""
    with relay.cond:
        client = relay.sockets[-2]
    client.sendall((json.dumps(event) + "\n").encode())


def test_an_agent_without_on_message_ignores_peer_items(compiled, daemon, relay):
    job = start(daemon, task="one", env=through(relay))
    job.wait_texts(1)
    inject(relay, {"event": "deliver", "id": job.id, "seq": 9, "text": "a peer", "kind": "message"})
    job.reply("two")
    assert job.wait_texts(2) == ["one", "two"]
    assert 9 not in acked_seqs(relay)


def test_a_lost_connection_is_made_again_with_hello_and_the_latest_report(compiled, daemon, relay):
    job = start(daemon, env=through(relay))
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


def test_started_again_it_only_acks_what_it_had_finished(compiled, daemon, relay):
    # The acks of "one" and "two" are lost on the way, then the agent dies (kill -9) in the
    # handler of "boom": the daemon still holds all three. Started again, the agent hands
    # over only "boom" (agent.json says the others were finished).
    relay.hold = lambda message: message.get("op") == "ack"
    job = start(daemon, "ts-crasher", task="one", env=through(relay))
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


def test_a_handler_that_throws_counts_as_handled(compiled, daemon):
    job = start(daemon, task="raise")
    job.wait_texts(1)
    job.reply("after")
    assert job.wait_texts(2) == ["raise", "after"]
    job.wait_row(lambda row: row.get("queued", 0) == 0, "both acked")
    assert job.progress()["lastSeq"] == 2
    assert job.stdio() == ""


@pytest.mark.parametrize("finishes", [True, False], ids=["finishes-in-time", "finishes-after-close"])
def test_close_acks_a_running_reply_only_if_it_finishes_first(compiled, daemon, relay, finishes):
    job = start(daemon, env=through(relay))
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


def test_calls_answer_refuse_and_time_out(compiled, daemon, relay):
    job = start(daemon, env=through(relay))
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


def test_a_wrong_token_stops_the_agent_without_a_retry_loop(compiled, daemon, relay):
    job = start(daemon, env={**through(relay), "PROTO_TOKEN": "not-the-token"})
    job.wait_row(ended, "the agent to give up")
    with open(os.path.join(job.dir, "refused.json")) as handle:
        assert json.load(handle) == {"code": "unauthorized"}
    assert len(relay.ops("report")) == 1
    assert relay.connections == 1
    assert job.stdio() == ""


@pytest.mark.parametrize("how", ["kill-9", "shutdown-keep-workers"])
def test_the_agent_comes_back_after_a_daemon_restart(compiled, daemon, relay, how):
    job = start(daemon, task="before", env=through(relay))
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


def test_a_reply_accepted_just_before_a_kill_9_is_delivered_after_it_once(compiled, daemon):
    job = start(daemon, task="hold")          # its handler waits for `release`
    job.wait_row(lambda row: row["summary"] == "handling: hold", "the handler to hold")
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


def test_a_reply_resent_with_its_request_id_is_handled_once(compiled, daemon):
    job = start(daemon, task="first")
    job.wait_texts(1)
    assert job.reply("again?", requestId="ts:1") == {"delivered": True, "saved": True}
    assert job.reply("again? (resent)", requestId="ts:1")["duplicate"] is True
    job.reply("third")
    assert job.wait_texts(3) == ["first", "again?", "third"]
    job.wait_row(lambda row: row.get("queued", 0) == 0, "every reply acked")
    assert job.texts() == ["first", "again?", "third"]


def test_its_exit_ends_the_row(compiled, daemon):
    job = start(daemon, task="exit")
    row = job.wait_row(ended, "the job to end")
    assert (row["state"], row["summary"]) == ("done", "bye")
    assert row.get("queued", 0) == 0   # close() waited for the ack of "exit"
    assert job.stdio() == ""


def test_an_agent_that_ends_without_close_still_gets_its_last_report_through(compiled, daemon):
    job = start(daemon, "ts-no-close")
    row = job.wait_row(ended, "the agent to end")
    assert (row["state"], row["summary"]) == ("done", "finished without close()")


def test_outside_a_job_it_says_so_and_connects_nowhere(compiled):
    env = {key: value for key, value in os.environ.items() if not key.startswith(("ROOST_", "PI_JOB", "PI_DAEMON"))}
    out = subprocess.run([NODE, RECORDER], env=env, capture_output=True, text=True, timeout=30)
    assert (out.returncode, out.stdout, out.stderr) == (2, "recorder: not inside a roost job\n", "")


def test_the_client_needs_node_alone():
    with open(os.path.join(PACKAGE, "package.json"), encoding="utf-8") as handle:
        package = json.load(handle)
    assert not package.get("dependencies") and not package.get("peerDependencies")
    with open(os.path.join(PACKAGE, "src", "roost-agent.ts"), encoding="utf-8") as handle:
        source = handle.read()
    imports = re.findall(r'^import .* from "([^"]+)";', source, flags=re.M)
    assert imports and all(name.startswith("node:") for name in imports), imports
    # Every devDependency is pinned, and the lock file says what was installed.
    assert all(re.fullmatch(r"\d+\.\d+\.\d+", version) for version in package["devDependencies"].values())
    with open(os.path.join(PACKAGE, "package-lock.json"), encoding="utf-8") as handle:
        lock = json.load(handle)
    for name, version in package["devDependencies"].items():
        assert lock["packages"][f"node_modules/{name}"]["version"] == version
