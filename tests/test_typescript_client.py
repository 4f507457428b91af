"""The TypeScript client (clients/typescript/src/roost-agent.ts) against the real daemon:
what only this client has (peer items, calls, a resent request id, node alone). The
conformance scenarios it shares with roost_agent.py are one list: tests/test_agent_clients.py.

A scripted agent on the client (clients/typescript/test/recorder.ts, compiled once per
session with the package's pinned tsc) runs as a protocol job from a profile; the test
watches its rows, its records, and, through the relay (tests/protokit.py), every line
it sends. Needs node and `scripts/setup` (which installs the package's dev dependencies).
"""

import json
import os
import re
import subprocess

import pytest

from conftest import wait_for
from protokit import Relay, acked_seqs, ended, relay, through  # noqa: F401 (a fixture)
from tskit import NODE, PACKAGE, RECORDER, compiled, start  # noqa: F401 (a fixture)


pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed: the TypeScript client needs it")


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


def test_a_handler_that_throws_counts_as_handled(compiled, daemon):
    job = start(daemon, task="raise")
    job.wait_texts(1)
    job.reply("after")
    assert job.wait_texts(2) == ["raise", "after"]
    job.wait_row(lambda row: row.get("queued", 0) == 0, "both acked")
    assert job.progress()["lastSeq"] == 2
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
