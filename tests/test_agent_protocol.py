"""roost_agent.py against the real daemon: agents built on it (tests/agents/proto_*.py and
examples/) run as protocol jobs from a profile, and the test watches what they say.

To see the wire, an agent may be pointed (through its launch env) at a relay: a plain
pipe to the real daemon's socket that records each line the agent sends, and can drop
every connection, hold back a request or lose an ack on the way. The daemon answers
everything itself.
"""

import json
import os
import socket
import subprocess
import threading

import pytest

from conftest import AGENTS, PYTHON, ROOT, wait_for
from roost.client.connection import Refused
from test_agent_client_static import interpreters

RECORDER = os.path.join(AGENTS, "proto_recorder.py")
CRASHER = os.path.join(AGENTS, "proto_crasher.py")
NO_CLOSE = os.path.join(AGENTS, "proto_no_close.py")
EXAMPLES = os.path.join(ROOT, "examples")


class Relay:
    """Unix socket relay: agent <-> relay <-> daemon, recording agent -> daemon lines."""

    def __init__(self, path, upstream):
        self.path = path
        self.upstream = upstream
        self.cond = threading.Condition()
        self.sent = []           # (connection number, message) from the agent, in order
        self.received = []       # (connection number, message) from the daemon, in order
        self.sockets = []
        self.connections = 0
        self.hold = lambda message: False   # True: the request is not passed on
        self.on_sent = None                  # called with each message from the agent
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(path)
        self.listener.listen(16)
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                upstream.connect(self.upstream)
            except OSError:   # the daemon is away: so is the relay's answer
                upstream.close()
                client.close()
                continue
            with self.cond:
                self.connections += 1
                number = self.connections
                self.sockets += [client, upstream]
            threading.Thread(target=self._pump, args=(client, upstream, number), daemon=True).start()
            threading.Thread(target=self._pipe, args=(upstream, client, number), daemon=True).start()

    def _pump(self, client, upstream, number):
        pending = b""
        try:
            while True:
                chunk = client.recv(65536)
                if not chunk:
                    break
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    message = json.loads(line)
                    if self.on_sent is not None:
                        self.on_sent(message)
                    with self.cond:
                        self.sent.append((number, message))
                        self.cond.notify_all()
                    if not self.hold(message):
                        upstream.sendall(line + b"\n")
        except OSError:
            pass
        finally:
            self._close(client, upstream)

    def _pipe(self, source, target, number):
        pending = b""
        try:
            while True:
                chunk = source.recv(65536)
                if not chunk:
                    break
                target.sendall(chunk)
                pending += chunk
                *lines, pending = pending.split(b"\n")
                with self.cond:
                    self.received += [(number, json.loads(line)) for line in lines]
        except OSError:
            pass
        finally:
            self._close(source, target)

    def _close(self, *socks):
        for sock in socks:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def drop_all(self):
        with self.cond:
            socks = list(self.sockets)
        self._close(*socks)

    def ops(self, op=None, connection=None):
        with self.cond:
            return [message for number, message in self.sent
                    if (op is None or message.get("op") == op) and (connection is None or number == connection)]

    def close(self):
        self.listener.close()
        self.drop_all()


class ProtoJob:
    def __init__(self, daemon, job_id):
        self.daemon = daemon
        self.id = job_id
        self.dir = os.path.join(daemon.home, "jobs", job_id)

    def row(self):
        rows = [row for row in self.daemon.call("list", all=True)["jobs"] if row["id"] == self.id]
        return rows[0] if rows else None

    def reply(self, text, **args):
        return self.daemon.call("reply", id=self.id, text=text, **args)

    def handled(self):
        try:
            with open(os.path.join(self.dir, "handled.jsonl"), encoding="utf-8") as handle:
                return [json.loads(line) for line in handle]
        except FileNotFoundError:
            return []

    def texts(self):
        return [entry["text"] for entry in self.handled()]

    def wait_texts(self, count, timeout=15):
        return wait_for(lambda: len(self.handled()) >= count and self.texts(), timeout=timeout,
                        what=f"{count} replies handled by job {self.id}")

    def wait_row(self, predicate, what, timeout=15):
        return wait_for(lambda: (lambda row: row if row and predicate(row) else None)(self.row()),
                        timeout=timeout, what=what)

    def touch(self, name, text=""):
        with open(os.path.join(self.dir, name), "w") as handle:
            handle.write(text)

    def stdio(self):
        """What the agent's process wrote on stdout and stderr (the recorder keeps it)."""
        with open(os.path.join(self.dir, "stdio.txt"), encoding="utf-8", errors="replace") as handle:
            return handle.read()

    def progress(self):
        with open(os.path.join(self.dir, "agent.json"), encoding="utf-8") as handle:
            return json.load(handle)


def ended(row):
    return row["endedAt"] is not None


@pytest.fixture
def relay(daemon):
    relay = Relay(os.path.join(os.path.dirname(daemon.home), "relay.sock"), daemon.socket)
    yield relay
    relay.close()


def write_profiles(daemon, python=PYTHON):
    profiles = {
        "recorder": {"command": [python, RECORDER], "task": "type", "protocol": True},
        "crasher": {"command": [python, CRASHER, "boom"], "task": "type", "protocol": True},
        "no-close": {"command": [python, NO_CLOSE], "protocol": True},
        "echo": {"command": [python, os.path.join(EXAMPLES, "echo_agent.py")], "task": "type", "protocol": True},
        "ask": {"command": [python, os.path.join(EXAMPLES, "ask_agent.py"), "greeting.txt"], "protocol": True},
        "helper": {"command": [python, os.path.join(EXAMPLES, "helper_agent.py")], "protocol": True},
        "lead": {"command": [python, os.path.join(EXAMPLES, "lead_agent.py"), "helper"], "task": "type",
                 "protocol": True},
    }
    with open(os.path.join(daemon.home, "roost.json"), "w", encoding="utf-8") as handle:
        json.dump({"agentProfiles": profiles}, handle)


def start(daemon, profile, task=None, env=None, python=PYTHON, cwd=None):
    write_profiles(daemon, python)
    launch = {"kind": "shell", "cwd": cwd or os.path.dirname(daemon.home), "sessionFile": "",
              "command": [], "env": env or {}, "name": profile, "origin": "dispatch", "profile": profile}
    if task is not None:
        launch["task"] = task
    return ProtoJob(daemon, daemon.call("dispatch", **launch)["id"])


def acked_seqs(relay):
    return {ack["args"]["seq"] for ack in relay.ops("ack")}


def through(relay):
    return {"PROTO_RELAY_SOCKET": relay.path}


def test_the_first_report_connects_saying_hello_first_and_sets_the_row(daemon, relay):
    job = start(daemon, "recorder", env=through(relay))
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
    for field in ("question", "tool", "error", "name", "model"):
        assert report[field] is None    # a full snapshot: what is not given is null
    assert report["choices"] == []
    assert job.stdio() == ""


@pytest.mark.parametrize("python", interpreters())
def test_the_task_is_reply_1_and_replies_come_in_order_once_each(daemon, python):
    job = start(daemon, "recorder", task="first task", python=python)
    job.wait_texts(1)
    for text in ("two", "three", "four"):
        job.reply(text)
    assert job.wait_texts(4) == ["first task", "two", "three", "four"]
    assert [entry["seq"] for entry in job.handled()] == [1, 2, 3, 4]
    assert len({entry["run"] for entry in job.handled()}) == 1
    job.wait_row(lambda row: row.get("queued", 0) == 0 and row["summary"] == "handled 4: four", "every reply acked")
    assert job.progress()["lastSeq"] == 4 and job.progress()["version"] == 1
    job.reply("steered", mode="steer")
    job.wait_texts(5)
    assert job.handled()[-1]["mode"] == "steer"
    assert job.stdio() == ""


def test_an_ack_follows_the_handler_and_the_write_of_agent_json(daemon, relay):
    job = start(daemon, "recorder", env=through(relay))
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
    assert job.texts() == ["one", "hold", "three"]
    delivered = [message["seq"] for _, message in relay.received if message.get("event") == "deliver"]
    assert sorted(set(delivered)) == [1, 2, 3]   # a seq sent twice is handed over once
    assert job.stdio() == ""


def test_a_lost_connection_is_made_again_with_hello_and_the_latest_report(daemon, relay):
    job = start(daemon, "recorder", env=through(relay))
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


def test_started_again_it_only_acks_what_it_had_finished(daemon, relay):
    # The acks of "one" and "two" are lost on the way, then the agent dies in the handler
    # of "boom": the daemon still holds all three. Started again, the agent hands over only
    # "boom" (agent.json says the others were finished).
    relay.hold = lambda message: message.get("op") == "ack"
    job = start(daemon, "crasher", task="one", env=through(relay))
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
def test_close_acks_a_running_reply_only_if_it_finishes_first(daemon, relay, finishes):
    job = start(daemon, "recorder", env=through(relay))
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


def test_a_wrong_token_stops_the_agent_without_a_retry_loop(daemon, relay):
    job = start(daemon, "recorder", env={**through(relay), "PROTO_TOKEN": "not-the-token"})
    job.wait_row(ended, "the agent to give up")
    with open(os.path.join(job.dir, "refused.json")) as handle:
        assert json.load(handle) == {"code": "unauthorized"}
    assert len(relay.ops("report")) == 1
    assert job.stdio() == ""


@pytest.mark.parametrize("how", ["kill-9", "shutdown-keep-workers"])
def test_the_agent_comes_back_after_a_daemon_restart(daemon, relay, how):
    job = start(daemon, "recorder", task="before", env=through(relay))
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
    job.reply("after")
    assert job.wait_texts(2) == ["before", "after"]
    assert job.row()["pid"] == pid
    job.wait_row(lambda row: row.get("queued", 0) == 0, "the reply acked")
    assert job.stdio() == ""


def test_its_exit_ends_the_row(daemon):
    job = start(daemon, "recorder", task="exit")
    row = job.wait_row(ended, "the job to end")
    assert (row["state"], row["summary"]) == ("done", "bye")


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


def test_an_agent_that_ends_without_close_still_gets_its_last_report_through(daemon):
    job = start(daemon, "no-close")
    row = job.wait_row(ended, "the agent to end")
    assert (row["state"], row["summary"]) == ("done", "finished without close()")


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
