"""Many clients replying to one job at the same moment (issue 15): every reply answered
ok reaches the agent once, in seq order, and an ack covers only what the agent was sent.
A protocol agent, a raw connection that acks cumulatively, a terminal agent, and peers'
messages, each against a real daemon."""

import json
import os
import socket
import threading

from conftest import wait_for
from jobkit import agent, dispatch, job_token, wait_row
from peerkit import items_agent, messages
from protokit import start
from roost.client.connection import Client, Refused

AT_ONCE = 40


def at_once(count, action):
    """Run action(i) for i in range(count) from `count` threads released together; the
    results (or the exceptions raised) in order."""
    gate = threading.Barrier(count)
    results = [None] * count

    def run(index):
        gate.wait()
        try:
            results[index] = action(index)
        except Exception as error:    # noqa: BLE001  (kept for the test to look at)
            results[index] = error

    threads = [threading.Thread(target=run, args=(index,)) for index in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return results


def reply_from_own_connection(daemon, job_id):
    def action(index):
        with Client.connect(daemon.socket, timeout=30) as client:
            return client.call("reply", {"id": job_id, "text": f"reply {index}"})
    return action


def test_replies_at_once_from_many_connections_reach_a_protocol_agent_once_each_in_order(daemon):
    job = start(daemon, "recorder")
    job.wait_row(lambda current: current["summary"] == "ready", "the agent to be ready")
    answers = at_once(AT_ONCE, reply_from_own_connection(daemon, job.id))
    assert all(isinstance(answer, dict) and answer["saved"] for answer in answers), answers
    handled = wait_for(lambda: len(job.handled()) >= AT_ONCE and job.handled(), timeout=30,
                       what="every reply handled")
    seqs = [entry["seq"] for entry in handled]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs), seqs
    assert sorted(entry["text"] for entry in handled) == sorted(f"reply {i}" for i in range(AT_ONCE))
    job.wait_row(lambda current: current["queued"] == 0, "every reply acked")


class RawAgent:
    """The test speaks for a protocol job itself: it reports on one connection, reads
    the deliveries on a thread, and acks when it is told to."""

    def __init__(self, daemon, job_id):
        self.job_id = job_id
        self.token = job_token(daemon.home, job_id)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(daemon.socket)
        self.delivered = []
        self.answers = {}
        self.cond = threading.Condition()
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()

    def request(self, op, args):
        with self.cond:
            self.next_id += 1
            number = self.next_id
        self.sock.sendall((json.dumps({"id": number, "op": op, "args": args}) + "\n").encode())
        with self.cond:
            self.cond.wait_for(lambda: number in self.answers, 15)
            return self.answers.pop(number)

    def report(self):
        return self.request("report", {"id": self.job_id, "token": self.token, "report": {
            "state": "blocked", "status": "waiting", "summary": "raw agent"}})

    def ack(self, seq):
        return self.request("ack", {"id": self.job_id, "token": self.token, "seq": seq})

    def _read(self):
        pending = b""
        while True:
            try:
                chunk = self.sock.recv(65536)
            except OSError:
                return
            if not chunk:
                return
            pending += chunk
            *lines, pending = pending.split(b"\n")
            with self.cond:
                for line in lines:
                    message = json.loads(line)
                    if message.get("event") == "deliver":
                        self.delivered.append(message["seq"])
                    elif "id" in message:
                        self.answers[message["id"]] = message
                self.cond.notify_all()

    def seen(self):
        with self.cond:
            return list(self.delivered)

    def close(self):
        self.sock.close()


def test_a_cumulative_ack_in_the_middle_of_replies_at_once_loses_none(daemon):
    job_id = dispatch(daemon, ["sleep", "300"], name="raw", protocol=True)
    raw = RawAgent(daemon, job_id)
    try:
        assert raw.report()["ok"]
        acks = []

        def ack_what_came():
            # Acks, cumulatively, the highest seq seen so far, while replies still arrive.
            while len(acks) < 20:
                seen = raw.seen()
                if seen:
                    acks.append(raw.ack(max(seen)))
        acker = threading.Thread(target=ack_what_came)
        acker.start()
        answers = at_once(AT_ONCE, reply_from_own_connection(daemon, job_id))
        acker.join(30)
        assert all(isinstance(answer, dict) and answer["saved"] for answer in answers), answers
        seen = wait_for(lambda: len(raw.seen()) >= AT_ONCE and raw.seen(), timeout=15,
                        what="every reply delivered")
        assert sorted(seen) == sorted(set(seen)) == seen, seen
        raw.ack(max(seen))
        wait_row(daemon, job_id, lambda current: current["queued"] == 0, what="the last ack")
    finally:
        raw.close()


def test_replies_at_once_to_a_terminal_agent_are_typed_once_each_and_only_at_its_prompt(daemon, tmp_path):
    log_path = tmp_path / "lines.jsonl"
    term = {"submit": "\r", "settleMs": 150, "waiting": "^>\\s*$", "working": "^working\\.\\.\\.$"}
    job_id = dispatch(daemon, agent("counts_lines.py", log_path, 0.02), term=term)
    wait_row(daemon, job_id, lambda current: current["status"] == "waiting", what="the prompt")
    answers = at_once(AT_ONCE, reply_from_own_connection(daemon, job_id))
    assert all(isinstance(answer, dict) and "error" not in answer for answer in answers), answers

    def lines():
        if not log_path.exists():
            return []
        return [json.loads(line) for line in log_path.read_text().splitlines()]
    got = wait_for(lambda: len(lines()) >= AT_ONCE and lines(), timeout=60, what="every reply typed")
    assert sorted(entry["line"] for entry in got) == sorted(f"reply {i}" for i in range(AT_ONCE))
    assert not [entry for entry in got if entry["early"]], "typed while the agent worked"
    wait_row(daemon, job_id, lambda current: current["queued"] == 0, what="the queue empty")


def test_messages_at_once_from_many_sessions_reach_an_agent_once_each_in_order(daemon):
    target = items_agent(daemon, "helper")

    def send(index):
        with Client.connect(daemon.socket, timeout=30) as client:
            client.call("peer_register", {"name": f"peer {index}", "cwd": "/tmp", "pid": os.getpid()})
            try:
                return client.call("send", {"to": "helper", "message": f"message {index}"})
            except Refused as refusal:
                return refusal.code
    outcomes = at_once(AT_ONCE, send)
    taken = [index for index, outcome in enumerate(outcomes) if isinstance(outcome, dict)]
    # 20 items may wait for one session (M43): the rest are refused `full`, never lost.
    assert all(outcomes[index] == "full" for index in range(AT_ONCE) if index not in taken), outcomes
    assert len(taken) >= 20
    got = wait_for(lambda: len(messages(target)) >= len(taken) and messages(target), timeout=30,
                   what="every message taken")
    seqs = [entry["seq"] for entry in got]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs), seqs
    assert sorted(entry["text"].split("message ")[-1].split()[0] for entry in got) == \
        sorted(str(index) for index in taken)
