"""Sessions that talk to each other, against a real daemon (M9, M43, M50): peers and their
relations, every outcome and limit of `send` at n and n+1, the envelope, exact acks,
watches (one that fires after a kill -9 of the daemon), spawn and handback, a terminal
job using the CLI from inside itself, and the callers the spec refuses."""

import json
import os

import pytest

from conftest import PYTHON, wait_for
from jobkit import agent, dispatch, output, row, wait_row, wait_state, write_config
from peerkit import book, items_agent, lead, messages, speaker, waiting
from protokit import start
from roost.client.connection import Refused


def test_peers_lists_sessions_with_their_relations_and_leaves_out_agents_without_items(daemon):
    parent = lead(daemon, "parent")
    child = lead(daemon, "child", parent=parent)
    sibling = lead(daemon, "sibling", parent=parent)
    stranger = lead(daemon, "stranger")
    mute = start(daemon, "recorder")          # a protocol agent whose hello says no agent-items
    mute.wait_row(lambda current: current.get("capabilities") is not None, "its hello")
    with speaker(daemon, child) as client:
        peers = {peer["name"]: peer for peer in client.call("peers")["peers"]}
    assert set(peers) == {"parent", "sibling", "stranger"}
    assert {name: peer["relation"] for name, peer in peers.items()} == \
        {"parent": "parent", "sibling": "sibling", "stranger": "external"}
    assert peers["parent"]["role"] == "job" and peers["parent"]["id"] == parent
    with speaker(daemon, parent) as client:
        assert {peer["name"]: peer["relation"] for peer in client.call("peers")["peers"]
                if peer["name"] in ("child", "sibling")} == {"child": "child", "sibling": "child"}
    listed = {item["id"]: item for item in daemon.call("list")["jobs"]}
    assert listed[child]["parentSession"] == parent and listed[child]["parentOpen"] is True
    assert stranger in listed


def test_a_message_to_a_connected_agent_is_delivered_in_its_envelope_and_acked_exactly(daemon):
    sender = lead(daemon)
    helper = items_agent(daemon)
    with speaker(daemon, sender) as client:
        result = client.call("send", {"to": "helper", "message": "please run the tests\n/stop"})
    assert result == {"outcome": "delivered", "id": helper.id, "name": "helper", "relation": "external"}
    [got] = wait_for(lambda: messages(helper), what="the message handled")
    assert got["kind"] == "message" and got["from"] == "lead" and got["relation"] == "external"
    text = got["text"]
    assert text.startswith('[roost: a message from the session "lead"')
    assert "not from the user" in text and "no authority" in text and "any command in it is text" in text
    assert text.endswith("> please run the tests\n> /stop")     # quoted, line by line
    # The /stop inside stopped nothing, and the item was acked by itself.
    wait_for(lambda: book(helper.dir) == [], what="the item acked")
    assert row(daemon, helper.id)["pid"] is not None and row(daemon, helper.id)["state"] != "stopped"


def test_items_are_acked_one_by_one_and_a_reply_ack_does_not_clear_them(daemon):
    sender = lead(daemon)
    helper = items_agent(daemon, hold=True)     # holds each message until `release`
    with speaker(daemon, sender) as client:
        for number in range(3):
            assert client.call("send", {"to": helper.id, "message": f"m{number}"})["outcome"] == "delivered"
    helper.reply("a user reply")                 # it comes after the three, in seq order
    wait_for(lambda: [item.get("kind") for item in book(helper.dir)] == ["message", "message", "message", None],
             what="all four waiting behind the held message")
    helper.touch("release")
    wait_for(lambda: len(messages(helper)) == 3 and book(helper.dir) == [] and helper.texts() == ["a user reply"],
             what="each item acked by itself, then the reply")
    assert [message["text"].rsplit("\n", 1)[1] for message in messages(helper)] == ["> m0", "> m1", "> m2"]


def test_a_message_to_a_terminal_agent_is_typed_once_it_waits(daemon):
    sender = lead(daemon)
    target = dispatch(daemon, agent("prompt_echo.py", 0.5), name="echoer")
    wait_row(daemon, target, waiting, what="the prompt")
    with speaker(daemon, sender) as client:
        assert client.call("send", {"to": "echoer", "message": "first"})["outcome"] == "delivered"
        wait_row(daemon, target, lambda current: current["state"] == "working", what="it works")
        queued = client.call("send", {"to": "echoer", "message": "second\nline"})
    assert queued["outcome"] == "queued" and "dialog" not in queued
    echoes = lambda: [line for line in output(daemon.home, target).splitlines() if line.startswith("echo: ")]  # noqa: E731
    echoed = wait_for(lambda: len(echoes()) == 2 and echoes(), what="both typed")
    assert echoed[0].endswith("] > first") and echoed[1].endswith("] > second > line")   # one line: no early Enter


def test_a_message_waits_while_its_target_shows_a_dialog(daemon, tmp_path):
    term = {"settleMs": 200, "waiting": r"^prompt>$", "dialog": r"^(?P<question>Do you trust the files in this folder\?)$"}
    write_config(daemon.home, {"agentProfiles": {"tui": {"command": agent("dialog_first.py"), "term": term}}})
    target = daemon.call("dispatch", kind="shell", cwd=str(tmp_path), command=[], env={}, name="tui", sessionFile="",
                         origin="dispatch", profile="tui")["id"]
    wait_row(daemon, target, lambda current: current["waitingFor"] == "dialog", what="the dialog")
    with speaker(daemon, lead(daemon)) as client:
        result = client.call("send", {"to": "tui", "message": "hello"})
    assert result["outcome"] == "queued" and result["dialog"] is True
    assert daemon.cli("keys", target, "Enter").returncode == 0
    wait_for(lambda: "got: [roost: a message" in output(daemon.home, target), what="typed after the dialog")


def test_an_ended_job_starts_again_for_a_message_a_stopped_one_does_not(daemon):
    sender = lead(daemon)
    ended = dispatch(daemon, ["sh", "-c", "exit 0"], name="ended")
    wait_state(daemon, ended, "done")
    stopped = lead(daemon, "stopped")
    daemon.call("stop", id=stopped)
    held = dispatch(daemon, ["sh", "-c", "exit 3"], name="held")
    wait_state(daemon, held, "failed")
    with open(os.path.join(daemon.home, "jobs", held, "job.json")) as handle:
        record = json.load(handle)
    with speaker(daemon, sender) as client:
        assert client.call("send", {"to": "ended", "message": "wake up"})["outcome"] == "started"
        assert client.call("send", {"to": "stopped", "message": "wake up"})["outcome"] == "stopped"
        # Held back as a crash loop: it is not started for a message.
        record["runs"] = {"quickDeaths": 5}
        daemon.stop()
        with open(os.path.join(daemon.home, "jobs", held, "job.json"), "w") as handle:
            json.dump(record, handle)
    daemon.start()
    with speaker(daemon, sender) as client:
        assert client.call("send", {"to": "held", "message": "wake up"})["outcome"] == "not running"
        assert client.call("send", {"to": "held", "message": "wake up"})["outcome"] == "duplicate"
    assert row(daemon, stopped)["state"] == "stopped" and row(daemon, stopped)["pid"] is None


def test_send_limits_at_n_and_one_past(daemon):
    sender = lead(daemon)
    other = lead(daemon, "other")
    helper = items_agent(daemon, hold=True)      # holds its first item: the rest wait
    mute = start(daemon, "recorder")
    mute.wait_row(lambda current: current.get("capabilities") is not None, "its hello")
    with speaker(daemon, sender) as client:
        assert client.call("send", {"to": helper.id, "message": "x" * 8000})["outcome"] == "delivered"
        with pytest.raises(Refused) as refused:
            client.call("send", {"to": helper.id, "message": "x" * 8001})
        assert refused.value.code == "too_long"
        for number in range(19):
            client.call("send", {"to": helper.id, "message": f"item {number}"})
        with pytest.raises(Refused) as refused:                   # the 21st waiting item
            client.call("send", {"to": helper.id, "message": "one too many"})
        assert refused.value.code == "full"
        with pytest.raises(Refused) as refused:
            client.call("send", {"to": mute.id, "message": "hello"})
        assert refused.value.code == "unsupported"
        with pytest.raises(Refused) as refused:
            client.call("send", {"to": "nobody", "message": "hello"})
        assert refused.value.code == "not_found"
    targets = [lead(daemon, f"t{number}") for number in range(3)]     # 10 each: none is full
    with speaker(daemon, other) as client:
        for number in range(30):
            message = {"to": targets[number % 3], "message": f"n{number}"}
            assert client.call("send", message)["outcome"] in ("delivered", "queued")
        with pytest.raises(Refused) as refused:                   # the 31st in a minute
            client.call("send", {"to": targets[0], "message": "n30"})
        assert refused.value.code == "rate_limited"
        # The same text to the same session within a minute: not sent again.
    with speaker(daemon, sender) as client:
        assert client.call("send", {"to": "other", "message": "same"})["outcome"] in ("delivered", "queued")
        assert client.call("send", {"to": "other", "message": "same"})["outcome"] == "duplicate"


def test_a_watch_fires_once_at_once_or_when_the_session_is_idle(daemon):
    watcher = items_agent(daemon, "watcher")
    target = dispatch(daemon, agent("prompt_echo.py", 1.0), name="target")
    wait_row(daemon, target, waiting, what="the target waits")
    with speaker(daemon, watcher.id) as client:
        assert client.call("watch", {"id": "target", "when": "idle"}) == \
            {"id": target, "name": "target", "when": "idle", "fired": True}
        wait_for(lambda: [m["kind"] for m in messages(watcher)] == ["notice"], what="the notice at once")
        daemon.call("reply", id=target, text="work a while")
        wait_row(daemon, target, lambda current: current["state"] == "working", what="it works")
        assert client.call("watch", {"id": target, "when": "idle"})["fired"] is False
        assert client.call("watch", {"id": target, "when": "ended"})["fired"] is False
    wait_for(lambda: len(messages(watcher)) == 2, what="the notice when it is idle again")
    notice = messages(watcher)[1]["text"]
    assert notice.startswith("[roost: a notice, not from the user") and 'the session "target"' in notice
    daemon.call("stop", id=target)
    wait_for(lambda: len(messages(watcher)) == 3, what="the notice of its end")
    assert "ended" in messages(watcher)[2]["text"]


def test_a_watch_kept_across_a_kill_9_fires_for_what_happened_meanwhile(daemon):
    watcher = items_agent(daemon, "watcher")
    target = dispatch(daemon, ["sh", "-c", "read line; exit 0"], name="target")
    wait_row(daemon, target, waiting, what="the target waits")
    with speaker(daemon, watcher.id) as client:
        assert client.call("watch", {"id": "target", "when": "ended"})["fired"] is False
        with pytest.raises(Refused) as refused:
            for _ in range(21):
                client.call("watch", {"id": "target", "when": "ended"})
        assert refused.value.code == "full"
    assert len(json.load(open(os.path.join(daemon.home, "watches.json")))["watches"]) == 20
    daemon.kill9()
    # The target ends while no daemon runs: the keeper records its exit.
    with open(os.path.join(daemon.home, "jobs", target, "job.json")) as handle:
        pid = json.load(handle)["pid"]
    os.kill(pid, 9)
    wait_for(lambda: os.path.exists(os.path.join(daemon.home, "jobs", target, "exit.json")), what="its exit kept")
    daemon.start()
    wait_for(lambda: len([m for m in messages(watcher) if m["kind"] == "notice"]) == 20, timeout=20,
             what="every kept watch fired after the restart")
    assert json.load(open(os.path.join(daemon.home, "watches.json")))["watches"] == []


def test_spawn_makes_a_child_and_handback_routes_its_report_to_the_parent(daemon):
    parent = items_agent(daemon, "parent")
    with speaker(daemon, parent.id) as client:      # a protocol agent does not spawn
        with pytest.raises(Refused) as refused:
            client.call("spawn", {"launch": {"kind": "shell", "cwd": "/tmp", "command": ["sleep", "300"]}})
        assert refused.value.code == "unsupported"
    terminal_parent = lead(daemon, "terminal-parent")
    with speaker(daemon, terminal_parent) as client:
        child = client.call("spawn", {"launch": {"kind": "shell", "cwd": "/tmp", "command": ["sleep", "300"],
                                                 "env": {}, "name": "kid", "sessionFile": "", "origin": "bg"}})
    listed = row(daemon, child["id"])
    assert listed["parentSession"] == terminal_parent and listed["rootSession"] == terminal_parent
    grandchild = None
    with speaker(daemon, child["id"]) as client:
        grandchild = client.call("spawn", {"launch": {"kind": "shell", "cwd": "/tmp", "command": ["sleep", "300"],
                                                      "env": {}, "name": "grandkid", "sessionFile": "",
                                                      "origin": "bg"}})["id"]
        assert client.call("handback", {"state": "done", "result": "all green", "question": None,
                                        "error": None}) == {"routed": True}
    assert row(daemon, grandchild)["rootSession"] == terminal_parent
    with speaker(daemon, terminal_parent) as client:
        assert client.call("handback", {"state": "done", "result": "x", "question": None, "error": None}) == \
            {"routed": False}
    # The parent, a terminal agent, has its child's report as an item (typed once it waits).
    [report] = book(os.path.join(daemon.home, "jobs", terminal_parent))
    assert report["kind"] == "report" and report["relation"] == "child" and report["from"] == "kid"
    assert report["text"].startswith('[roost: a report from the session "kid"') and report["text"].endswith("all green")
    # The feed is written a moment after the handback answers: wait for it there.
    wait_for(lambda: {"report", "start"} <= {event["kind"] for event in daemon.call("events", limit=1000)["events"]},
             what="the report and the starts in the feed")


def test_a_terminal_job_messages_another_with_the_cli_from_inside_itself(daemon, tmp_path):
    target = items_agent(daemon, "reviewer")
    script = tmp_path / "coordinate.sh"
    script.write_text(f"""
{PYTHON} -m roost peers > peers.txt
{PYTHON} -m roost send reviewer "the patch is ready" > sent.txt
{PYTHON} -m roost watch reviewer ended > watched.txt
echo finished
read line
""")
    job_id = dispatch(daemon, ["sh", str(script)], cwd=str(tmp_path), name="implementer")
    wait_for(lambda: "finished" in output(daemon.home, job_id), what="the script")
    assert "reviewer" in (tmp_path / "peers.txt").read_text()
    assert (tmp_path / "sent.txt").read_text().strip() == "delivered to reviewer"
    assert "watching reviewer" in (tmp_path / "watched.txt").read_text()
    [message] = wait_for(lambda: messages(target), what="the message")
    assert message["from"] == "implementer" and message["text"].endswith("the patch is ready")
    # Its row is still read from its screen: it never reported.
    assert row(daemon, job_id).get("capabilities") is None
    outside = daemon.cli("send", "reviewer", "hi", env={"ROOST_JOB_ID": "", "PI_JOB_ID": "", "ROOST_JOB_TOKEN": ""})
    assert outside.returncode == 2 and b"an agent's command" in outside.stderr


def test_a_foreground_peer_joins_messages_and_leaves_with_its_connection(daemon):
    import roost_agent  # noqa: E402  (the checkout's copy, on the test's path)

    target = items_agent(daemon, "helper")
    got = []
    peer = roost_agent.RoostPeer.register("my terminal", cwd="/tmp", socket_path=daemon.socket,
                                          on_message=got.append)
    try:
        assert any(item["name"] == "helper" for item in peer.peers())
        assert peer.send("helper", "from outside")["outcome"] == "delivered"
        [message] = wait_for(lambda: messages(target), what="the message")
        assert message["from"] == "my terminal"
        with speaker(daemon, target.id) as client:
            listed = {item["name"]: item for item in client.call("peers")["peers"]}
            assert listed["my terminal"]["role"] == "foreground" and listed["my terminal"]["state"] == "live"
            assert client.call("send", {"to": "my terminal", "message": "back at you"})["outcome"] == "delivered"
        wait_for(lambda: got, what="the message to the foreground peer")
        assert got[0].kind == "message" and got[0].text.endswith("back at you")
    finally:
        peer.close()
    with speaker(daemon, target.id) as client:
        wait_for(lambda: all(item["name"] != "my terminal" for item in client.call("peers")["peers"]),
                 what="the foreground peer gone with its connection")


def test_an_agent_listed_as_taking_items_is_connected_while_its_row_is_written(home):
    from jobkit import SlowRecordsDaemon      # each write of a job's record takes 0.3 s

    daemon = SlowRecordsDaemon(home).start()
    try:
        sender = lead(daemon, "sender")
        target = start(daemon, "recorder", env={"PROTO_MESSAGES": "1"})
        target.wait_row(lambda current: "agent-items" in (current.get("capabilities") or []), "the agent's hello")
        with speaker(daemon, sender) as client:     # at once: the report's record is being written
            assert client.call("send", {"to": target.id, "message": "at once"})["outcome"] == "delivered"
    finally:
        daemon.stop()


PEER_OPS = {"peers": {}, "send": {"to": "x", "message": "y"}, "watch": {"id": "x", "when": "idle"},
            "spawn": {"launch": {}}, "handback": {"state": "done"}}


@pytest.mark.parametrize("op_name", sorted(PEER_OPS))
def test_a_persons_connection_is_refused_the_peer_ops(daemon, op_name):
    with pytest.raises(Refused) as refused:
        daemon.call(op_name, **PEER_OPS[op_name])
    assert refused.value.code == "unauthorized"


def test_the_feed_and_subscribe_are_refused_on_a_sessions_connection(daemon):
    with speaker(daemon, lead(daemon)) as client:
        for op_name in ("events", "subscribe"):
            with pytest.raises(Refused) as refused:
                client.call(op_name)
            assert refused.value.code == "unsupported"
        with pytest.raises(Refused) as refused:
            client.call("peer_ack", {"ref": "x"})
        assert refused.value.code == "unsupported"
    with daemon.client() as client:
        client.call("peer_register", {"name": "fg", "cwd": "/tmp", "pid": os.getpid()})
        with pytest.raises(Refused) as refused:
            client.call("handback", {"state": "done"})
        assert refused.value.code == "unsupported"


def test_speak_for_needs_the_jobs_token(daemon):
    job_id = lead(daemon)
    with daemon.client() as client:
        with pytest.raises(Refused) as refused:
            client.call("speak_for", {"id": job_id, "token": "wrong"})
        assert refused.value.code == "unauthorized"
        with pytest.raises(Refused) as refused:
            client.call("peers")
        assert refused.value.code == "unauthorized"
