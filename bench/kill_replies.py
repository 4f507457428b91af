"""The kill -9 battery of replies: many clients reply at once to protocol agents and to
terminal agents, and a peer sends messages, while the daemon is killed with SIGKILL and
started again, over and over. Then it checks the promise: every reply and message
answered ok was handled by its agent, once, in seq order (0 lost, 0 handled again after
an ack).

    scripts/kill-replies [--kills N] [--agents N] [--clients N] [--seed S]

Defaults: 200 kills, 8 protocol agents (tests/agents/proto_recorder.py, on roost_agent.py)
and 2 terminal agents (tests/agents/counts_lines.py), 16 replying clients. Each client
gives every reply its own request id and, when an answer is lost to a kill, sends it again
with that id on a new connection until it is answered; acks race every restart. The
figures go to bench/results.json and RESULTS.md. tests/test_replies_kill9.py runs a
short battery in the test suite.

A terminal agent may be typed a reply twice when the daemon dies between typing it and
taking it off its book (the spec's "Request ids": the id is kept just after the text is
typed): those are counted apart, as `typed again`, and are not a loss.
"""

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, HERE)

from roost.client.connection import Client, Lost, Refused  # noqa: E402
from roost.jobs.reply_book import read_book  # noqa: E402
from benchkit import wait  # noqa: E402

RECORDER = os.path.join(ROOT, "tests", "agents", "proto_recorder.py")
COUNTS_LINES = os.path.join(ROOT, "tests", "agents", "counts_lines.py")
DAEMON = [sys.executable, "-m", "roost", "daemon", "--foreground"]
TERMINALS = 2
TERM = {"submit": "\r", "settleMs": 150, "waiting": "^>\\s*$", "working": "^working\\.\\.\\.$"}
SEND_EVERY_S = 0.5         # the peer's pace (each send is from a peer registered anew)
KILL_GAP_S = (0.05, 0.4)   # the daemon lives this long between kills


class Battery:
    def __init__(self, agents, clients, seed, say):
        self.random = random.Random(seed)
        self.clients = clients
        self.say = say
        self.base = tempfile.mkdtemp(prefix="rk-", dir="/tmp")
        self.home = os.path.join(self.base, "h")
        os.mkdir(self.home, 0o700)
        self.socket_path = os.path.join(self.home, "roost.sock")
        self.env = {**os.environ, "ROOST_HOME": self.home, "PYTHONPATH": ROOT}
        self.env.pop("ROOST_SOCKET", None)
        profiles = {"recorder": {"command": [sys.executable, RECORDER], "protocol": True}}
        with open(os.path.join(self.home, "roost.json"), "w") as handle:
            json.dump({"agentProfiles": profiles}, handle)
        self.process = None
        self.lock = threading.Lock()
        self.accepted = {}           # job id -> texts answered ok
        self.answers = {"ok": 0, "duplicate": 0, "resent": 0, "full": 0}
        self.messages = []           # (job id, text) of sends answered ok
        self.problems = []
        self.stopping = threading.Event()
        self.start_daemon()
        self.protocol_jobs = [self.dispatch_agent(index) for index in range(agents)]
        self.terminal_jobs = [self.dispatch_terminal(index) for index in range(TERMINALS)]
        for job_id in self.protocol_jobs + self.terminal_jobs:
            self.accepted[job_id] = []
        wait(self.all_ready, 60, "the agents to be ready")

    # -- the daemon -------------------------------------------------------------------

    def start_daemon(self):
        log = open(os.path.join(self.base, "daemon.err"), "ab")
        self.process = subprocess.Popen(DAEMON, env=self.env, stdout=log, stderr=subprocess.STDOUT,
                                        start_new_session=True)
        log.close()
        wait(self.answers_ping, 30, "the daemon to answer")

    def answers_ping(self):
        if self.process.poll() is not None:
            raise RuntimeError(f"the daemon exited with {self.process.returncode}")
        try:
            with Client.connect(self.socket_path, timeout=5) as client:
                return client.call("ping")
        except (OSError, Lost):
            return None

    def kill(self):
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(10)

    def call(self, op, **args):
        with Client.connect(self.socket_path, timeout=30) as client:
            return client.call(op, args)

    # -- the agents -------------------------------------------------------------------

    def dispatch_agent(self, index):
        launch = {"kind": "shell", "cwd": self.base, "sessionFile": "", "command": [],
                  "env": {"PROTO_MESSAGES": "1"}, "name": f"agent-{index}", "origin": "dispatch",
                  "profile": "recorder"}
        return self.call("dispatch", **launch)["id"]

    def dispatch_terminal(self, index):
        lines = os.path.join(self.base, f"terminal-{index}.jsonl")
        launch = {"kind": "shell", "cwd": self.base, "sessionFile": "", "env": {},
                  "command": [sys.executable, COUNTS_LINES, lines, "0.01"], "name": f"terminal-{index}",
                  "origin": "dispatch", "term": TERM}
        return self.call("dispatch", **launch)["id"]

    def rows(self):
        return {row["id"]: row for row in self.call("list", all=True)["jobs"]}

    def all_ready(self):
        rows = self.rows()
        return all(rows[job_id]["summary"] == "ready" for job_id in self.protocol_jobs) and \
            all(rows[job_id]["status"] == "waiting" for job_id in self.terminal_jobs)

    # -- the load ---------------------------------------------------------------------

    def replier(self, number):
        """Replies one after another to a random job, each with its own request id,
        resent with that id on a new connection until it is answered."""
        chooser = random.Random(self.random.random())
        jobs = self.protocol_jobs + self.terminal_jobs
        count = 0
        while not self.stopping.is_set():
            count += 1
            job_id = chooser.choice(jobs)
            text = f"c{number}-{count}"
            tries = 0
            while True:
                tries += 1
                try:
                    with Client.connect(self.socket_path, timeout=30) as client:
                        answer = client.call("reply", {"id": job_id, "text": text, "requestId": text})
                except Refused as refusal:
                    if refusal.code == "full":
                        with self.lock:
                            self.answers["full"] += 1
                        time.sleep(0.05)     # not taken: the same id again, later
                        continue
                    with self.lock:
                        self.problems.append(f"reply {text} refused: {refusal.code} {refusal}")
                    break
                except (OSError, Lost):
                    time.sleep(0.01)         # the daemon is away: send it again when it is back
                    continue
                with self.lock:
                    self.accepted[job_id].append(text)
                    self.answers["duplicate" if answer.get("duplicate") else "ok"] += 1
                    if tries > 1:
                        self.answers["resent"] += 1
                break
            time.sleep(chooser.uniform(0.0, 0.01))

    def sender(self):
        """A peer of its own connection sends a message now and then; a send whose answer
        was lost is not counted (send has no request id: it may or may not be taken)."""
        count = 0
        while not self.stopping.wait(SEND_EVERY_S):
            count += 1
            job_id = self.random.choice(self.protocol_jobs)
            text = f"message-{count}-end"     # no text is a part of another
            try:
                with Client.connect(self.socket_path, timeout=30) as client:
                    client.call("peer_register", {"name": "battery", "cwd": self.base, "pid": os.getpid()})
                    answer = client.call("send", {"to": job_id, "message": text})
            except (OSError, Lost, Refused):
                continue
            if answer.get("outcome") in ("delivered", "queued"):
                with self.lock:
                    self.messages.append((job_id, text))

    # -- the run ----------------------------------------------------------------------

    def run(self, kills):
        threads = [threading.Thread(target=self.replier, args=(number,), daemon=True)
                   for number in range(self.clients)]
        threads.append(threading.Thread(target=self.sender, daemon=True))
        for thread in threads:
            thread.start()
        started = time.monotonic()
        for number in range(kills):
            time.sleep(self.random.uniform(*KILL_GAP_S))
            self.kill()
            self.start_daemon()
            if (number + 1) % 25 == 0:
                self.say(f"kill-replies: {number + 1} of {kills} kills")
        self.stopping.set()
        for thread in threads:
            thread.join(120)
        try:
            wait(self.all_taken, 180, "every reply taken off the books")
        except RuntimeError as error:
            raise RuntimeError(f"{error}: {self.describe()}") from None
        seconds = time.monotonic() - started
        return self.check(kills, seconds)

    def all_taken(self):
        rows = self.rows()
        return all(rows[job_id]["queued"] == 0 for job_id in self.accepted) and self.messages_taken()

    def describe(self):
        """What still waits where, for a run that did not finish."""
        lines = []
        for job_id, row in self.rows().items():
            pending = [item["seq"] for item in read_book(os.path.join(self.home, "jobs", job_id))["pending"]]
            lines.append(f"{row['name']} {row['state']}/{row['status']} queued {row['queued']} "
                         f"pending {pending} summary {row['summary']!r}")
        return "; ".join(lines)

    def messages_taken(self):
        return not any(read_book(os.path.join(self.home, "jobs", job_id))["pending"]
                       for job_id in self.protocol_jobs)

    def handled(self, job_id, name="handled.jsonl"):
        try:
            with open(os.path.join(self.home, "jobs", job_id, name), encoding="utf-8") as handle:
                return [json.loads(line) for line in handle if line.strip()]
        except FileNotFoundError:
            return []

    def typed(self, index):
        try:
            with open(os.path.join(self.base, f"terminal-{index}.jsonl"), encoding="utf-8") as handle:
                return [json.loads(line)["line"] for line in handle if line.strip()]
        except FileNotFoundError:
            return []

    def check(self, kills, seconds):
        lost = handled_again = out_of_order = typed_again = 0
        for job_id in self.protocol_jobs:
            entries = self.handled(job_id)
            seqs = [entry["seq"] for entry in entries]
            texts = [entry["text"] for entry in entries]
            out_of_order += sum(1 for a, b in zip(seqs, seqs[1:]) if b <= a)
            handled_again += len(texts) - len(set(texts))
            lost += len(set(self.accepted[job_id]) - set(texts))
            got = [entry["text"] for entry in self.handled(job_id, "messages.jsonl")]
            lost += sum(1 for target, text in self.messages
                        if target == job_id and not any(text in envelope for envelope in got))
        for index, job_id in enumerate(self.terminal_jobs):
            lines = self.typed(index)
            typed_again += len(lines) - len(set(lines))
            lost += len(set(self.accepted[job_id]) - set(lines))
        replies = sum(len(texts) for texts in self.accepted.values())
        return {"kills": kills, "protocolAgents": len(self.protocol_jobs), "terminalAgents": len(self.terminal_jobs),
                "clients": self.clients, "replies": replies, "messages": len(self.messages),
                "resent": self.answers["resent"], "duplicateAnswers": self.answers["duplicate"],
                "fullAnswers": self.answers["full"], "lost": lost, "handledAgain": handled_again,
                "outOfOrder": out_of_order, "typedAgain": typed_again, "refused": len(self.problems),
                "problems": self.problems[:5], "seconds": round(seconds, 1)}

    def close(self):
        try:
            self.call("shutdown")
            self.process.wait(60)
        except Exception:       # noqa: BLE001  (whatever state it is in, it goes)
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait(10)
        for pid in os.listdir("/proc"):
            if pid.isdigit():
                try:
                    with open(f"/proc/{pid}/environ", "rb") as handle:
                        environ = handle.read()
                    if f"ROOST_HOME={self.home}".encode() in environ or \
                            f"ROOST_JOB_DIR={self.home}/".encode() in environ:
                        os.kill(int(pid), signal.SIGKILL)
                except OSError:
                    pass
        shutil.rmtree(self.base, ignore_errors=True)


def battery(kills, agents, clients, seed, say=lambda text: None):
    """One run; its figures (the check's counts included)."""
    run = Battery(agents, clients, seed, say)
    try:
        figures = run.run(kills)
    finally:
        run.close()
    figures["seed"] = seed
    return figures


def held(figures):
    """The promise: nothing answered ok was lost, nothing handled twice or out of order."""
    return not (figures["lost"] or figures["handledAgain"] or figures["outOfOrder"] or figures["refused"])


def report(figures):
    verdict = "held" if held(figures) else "BROKEN"
    return (f"{figures['kills']} kills of the daemon (SIGKILL) under {figures['clients']} replying clients and "
            f"a sending peer, {figures['protocolAgents']} protocol agents and {figures['terminalAgents']} "
            f"terminal agents, seed {figures['seed']}: the promise {verdict}.\n\n"
            "| figure | value |\n|---|---|\n"
            f"| replies answered ok | {figures['replies']} |\n"
            f"| of them resent after a lost answer (same request id) | {figures['resent']} |\n"
            f"| answered `duplicate` (taken before the kill) | {figures['duplicateAnswers']} |\n"
            f"| messages answered delivered or queued | {figures['messages']} |\n"
            f"| lost (answered ok, never handled) | {figures['lost']} |\n"
            f"| handled again after an ack | {figures['handledAgain']} |\n"
            f"| handled out of seq order | {figures['outOfOrder']} |\n"
            f"| terminal replies typed again (killed between typing and its removal) | {figures['typedAgain']} |\n"
            f"| run time | {figures['seconds']} s |")


def main(argv):
    parser = argparse.ArgumentParser(description="the kill -9 battery of replies")
    parser.add_argument("--kills", type=int, default=200)
    parser.add_argument("--agents", type=int, default=8)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--seed", type=int, default=None)
    options = parser.parse_args(argv)
    seed = options.seed if options.seed is not None else random.randrange(1 << 30)
    print(f"kill-replies: seed {seed}", file=sys.stderr, flush=True)
    started = time.monotonic()
    figures = battery(options.kills, options.agents, options.clients, seed,
                      say=lambda text: print(text, file=sys.stderr, flush=True))
    import run as results
    print(results.record("kill_replies", figures, round(time.monotonic() - started)))
    return 0 if held(figures) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
