"""Replies end to end: from a client writing the `reply` request (what `roost reply`
sends) to the agent's `on_reply` being called, with 1 and with 500 connected protocol
agents, and the `reply` op's own round trip. Floors measured in the same run: ping on the
same daemon, a raw unix-socket round trip between two Python processes (two hops, as
client -> daemon -> agent is), and the durable write a reply needs before it may be sent
(a record appended to its book's log and fdatasynced, as roost.jobs.book_writer does),
timed on a quiet disk and again after each reply, under the disk's conditions of the
moment (the agent's agent.json and the daemon's ack write share it; so may other
benchmarks). The 500 agents' rounds are run again with BUSY_LOOPS processes spinning
beside the daemon (`python3 -c 'while 1: pass'`): a machine whose cores are taken.

Each agent is a real job dispatched from a `protocol: true` profile running
bench/replies_agent.py (built on roost_agent.py) under `python -I -S`; it sends the
CLOCK_MONOTONIC time of its on_reply to the bench on a datagram socket. Replies go one
at a time (a short random gap between them, so each agent's ack is in before the next
reply), round-robin over the agents in a shuffled order, in ROUNDS rounds whose p99s
give the spread.

    .venv/bin/python bench/replies.py          # prints the figures
"""

import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, HERE)

from roost.client.connection import Client  # noqa: E402
from wire import ECHO_SERVER, round_trips  # noqa: E402
from benchkit import code_root, daemon_env, machine_stalls, percentile, stalls_row, wait  # noqa: E402

AGENT = os.path.join(HERE, "replies_agent.py")
MANY = 500
BATCH = 50                 # agents started at once: 2 cores start ~50 Pythons in a few s
ROUNDS = 3
SAMPLES_ONE = 300          # replies per round to the single agent
SAMPLES_MANY = 500         # replies per round with MANY agents (one per agent)
GAP_S = (0.004, 0.012)     # between replies: the previous reply's ack is taken meanwhile
PINGS = 2000
WRITES = 300
AIM_P99_MS = 10.0
AIM_BUSY_P99_MS = 15.0
BUSY_LOOPS = 2             # processes spinning beside the daemon for the last rounds
DAEMON = [sys.executable, "-m", "roost", "daemon", "--foreground"]






def _summary(values):
    return {"n": len(values), "p50_ms": round(percentile(values, 0.5), 3),
            "p99_ms": round(percentile(values, 0.99), 3), "max_ms": round(max(values), 3)}


def _in_ms(microseconds):
    return {"p50_ms": round(microseconds["p50_us"] / 1000, 3), "p99_ms": round(microseconds["p99_us"] / 1000, 3)}


def _rss_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _pids_carrying(text):
    """Our processes whose environment mentions `text` (the bench's home)."""
    needle = text.encode()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as handle:
                if needle in handle.read():
                    found.append(int(name))
        except OSError:
            pass
    return found


class Bench:
    """A daemon on a temp home with the bench's profile, a datagram socket the agents
    report to, and a connection that sends the timed replies."""

    def __init__(self):
        self.base = tempfile.mkdtemp(prefix="rr-", dir="/tmp")
        self.home = os.path.join(self.base, "h")
        os.mkdir(self.home, 0o700)
        self.env = daemon_env(ROOST_HOME=self.home)
        self.inbox_path = os.path.join(self.base, "inbox.sock")
        self.inbox = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.inbox.bind(self.inbox_path)
        self.inbox.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        profile = {"command": [sys.executable, "-I", "-S", AGENT, self.inbox_path], "protocol": True}
        with open(os.path.join(self.home, "roost.json"), "w") as handle:
            json.dump({"agentProfiles": {"bench": profile}}, handle)
        self.log = open(os.path.join(self.base, "daemon.err"), "wb")
        self.process = subprocess.Popen(DAEMON,
                                        env=self.env, cwd=code_root(), stdout=self.log,
                                        stderr=subprocess.STDOUT,
                                        start_new_session=True)
        self.socket_path = os.path.join(self.home, "roost.sock")
        try:
            self.control = wait(self._connect, 15, "the daemon")
            self.timed = wait(self._connect, 15, "the daemon")
        except BaseException:
            self.process.kill()
            self.process.wait(10)
            raise
        self.jobs = []
        self.sent = 0
        self.floor_writer = BookWriter(self.base)
        self.timeline = None   # a list: each reply's (text, written, called, answered) go in it

    def _connect(self):
        try:
            return Client.connect(self.socket_path, timeout=120)
        except OSError:
            return None

    def call(self, op, **args):
        return self.control.call(op, args)

    def keeper_pid(self):
        with open(os.path.join(self.home, "keeper.lock")) as handle:
            return int(handle.read().split()[0])

    # -- agents ---------------------------------------------------------------
    def start_agents(self, count):
        """Dispatch `count` more agents, BATCH at a time, each batch waited for until every
        agent in it has reported (it is connected and its connection is the job's)."""
        while count > 0:
            batch = []
            for _ in range(min(BATCH, count)):
                launch = {"kind": "shell", "cwd": self.base, "sessionFile": "", "command": [], "env": {},
                          "name": f"bench-{len(self.jobs) + len(batch)}", "origin": "dispatch", "profile": "bench"}
                batch.append(self.call("dispatch", **launch)["id"])
            wanted = set(batch)
            wait(lambda: wanted <= {row["id"] for row in self.call("list")["jobs"]
                                     if row["summary"] == "ready" and row["state"] == "blocked"},
                  120, f"{len(batch)} agents to report")
            self.jobs += batch
            count -= len(batch)

    def agent_pids(self):
        return [row["pid"] for row in self.call("list")["jobs"] if row["id"] in set(self.jobs) and row["pid"]]

    # -- the timed replies ----------------------------------------------------
    def time_reply(self, job_id):
        """One reply: (written -> on_reply ms, written -> answer ms)."""
        self.sent += 1
        text = f"bench reply {self.sent}"
        line = json.dumps({"id": self.sent, "op": "reply", "args": {
            "id": job_id, "text": text, "requestId": f"bench-{self.sent}"}}).encode() + b"\n"
        sock = self.timed.sock
        written = time.monotonic()
        sock.sendall(line)
        answer = self.timed.read_message()
        answered = time.monotonic()
        if not answer.get("ok") or answer.get("id") != self.sent:
            raise RuntimeError(f"reply refused: {answer}")
        if not answer["result"].get("delivered"):
            raise RuntimeError(f"the agent of job {job_id} was not connected: {answer}")
        self.inbox.settimeout(30)
        while True:
            seq, called, got = self.inbox.recv(65536).decode().split(" ", 2)
            if got == text:
                break
        if self.timeline is not None:
            self.timeline.append((text, written, float(called), answered))
        return (float(called) - written) * 1000, (answered - written) * 1000

    def time_replies(self, job_ids, samples):
        """`samples` replies; after each, in the gap before the next, one durable write of
        a reply book by the bench itself: the floor under the same disk conditions."""
        to_agent, round_trip, writes = [], [], []
        order = []
        while len(order) < samples:
            shuffled = list(job_ids)
            random.shuffle(shuffled)
            order += shuffled
        for job_id in order[:samples]:
            handled, answered = self.time_reply(job_id)
            to_agent.append(handled)
            round_trip.append(answered)
            gap_ends = time.monotonic() + random.uniform(*GAP_S)
            writes.append(self.floor_writer.write())
            time.sleep(max(0.0, gap_ends - time.monotonic()))
        return to_agent, round_trip, writes

    def rounds(self, job_ids, samples):
        """ROUNDS rounds: the figures pooled, and each round's p99 for the spread."""
        self.time_replies(job_ids, min(50, samples))   # warm up (first reply of each book)
        pooled_agent, pooled_trip, pooled_writes, per_round = [], [], [], []
        for _ in range(ROUNDS):
            to_agent, round_trip, writes = self.time_replies(job_ids, samples)
            pooled_agent += to_agent
            pooled_trip += round_trip
            pooled_writes += writes
            per_round.append({"to_agent_p99_ms": round(percentile(to_agent, 0.99), 3),
                              "to_agent_p50_ms": round(percentile(to_agent, 0.5), 3)})
        return {"to_agent": _summary(pooled_agent), "reply_round_trip": _summary(pooled_trip),
                "durable_write_between": _summary(pooled_writes), "rounds": per_round,
                "ping_round_trip": _in_ms(round_trips([self.socket_path], count=PINGS)[0])}

    def memory(self):
        agents = self.agent_pids()
        return {"daemon_rss_kib": _rss_kib(self.process.pid), "keeper_rss_kib": _rss_kib(self.keeper_pid()),
                "agents": len(agents),
                "agent_rss_kib_mean": round(sum(_rss_kib(pid) for pid in agents) / max(1, len(agents)))}

    # -- the end --------------------------------------------------------------
    def close(self):
        """shutdown without keepWorkers ends every job; then whatever still carries this
        home in its environment (daemon, keeper, agents) is killed."""
        try:
            self.call("shutdown")
            self.process.wait(120)
        except Exception:
            self.process.kill()
            self.process.wait(10)
        for client in (self.control, self.timed):
            client.close()
        leftovers = _pids_carrying(self.home)
        for pid in leftovers:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        self.inbox.close()
        self.log.close()
        shutil.rmtree(self.base, ignore_errors=True)
        return len(leftovers)


def raw_round_trip():
    """Two Python processes on a unix socket: a line out and back (client -> echo -> client)."""
    base = tempfile.mkdtemp(prefix="rr-", dir="/tmp")
    path = os.path.join(base, "echo.sock")
    echo = subprocess.Popen([sys.executable, "-c", ECHO_SERVER, path], stdout=subprocess.PIPE)
    try:
        echo.stdout.readline()
        return _in_ms(round_trips([path], count=PINGS)[0])
    finally:
        echo.kill()
        echo.wait()
        shutil.rmtree(base, ignore_errors=True)


class BookWriter:
    """Durable appends of a reply record to a book's log, as the daemon's store does them
    (one write, one fdatasync), inline (the daemon adds a threadpool hop)."""

    def __init__(self, directory):
        self.path = os.path.join(directory, "floor-replies.log")
        self.seq = 0
        with open(self.path, "wb"):
            pass

    def write(self):
        self.seq += 1
        record = {"add": {"seq": self.seq, "text": "bench reply", "at": int(time.time() * 1000)},
                  "rid": [f"bench-{self.seq}", self.seq]}
        started = time.monotonic()
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)
        try:
            os.write(fd, json.dumps(record).encode() + b"\n")
            os.fdatasync(fd)
        finally:
            os.close(fd)
        took = (time.monotonic() - started) * 1000
        if os.path.getsize(self.path) > 64 * 1024:
            os.truncate(self.path, 0)     # as the daemon's book folds its log
        return took


def durable_write():
    """The reply book's write on a quiet disk: before the daemon runs."""
    base = tempfile.mkdtemp(prefix="rr-", dir="/tmp")
    try:
        writer = BookWriter(base)
        return _summary([writer.write() for _ in range(WRITES)])
    finally:
        shutil.rmtree(base, ignore_errors=True)


def measure():
    figures = {"floor": {"raw_round_trip": raw_round_trip(), "durable_write": durable_write(),
                         "stalls": machine_stalls()}}
    bench = Bench()
    try:
        bench.start_agents(1)
        figures["one"] = bench.rounds(bench.jobs, SAMPLES_ONE)
        started = time.monotonic()
        bench.start_agents(MANY - 1)
        figures["start_many_s"] = round(time.monotonic() - started, 1)
        figures["many"] = bench.rounds(bench.jobs, SAMPLES_MANY)
        figures["many"]["memory"] = bench.memory()
        busy = [subprocess.Popen([sys.executable, "-c", "while 1: pass"]) for _ in range(BUSY_LOOPS)]
        try:
            figures["many_busy"] = bench.rounds(bench.jobs, SAMPLES_MANY)
        finally:
            for loop in busy:
                loop.kill()
                loop.wait()
    finally:
        figures["leftovers_killed"] = bench.close()
    return figures


def report(figures):
    one, many, floor = figures["one"], figures["many"], figures["floor"]
    busy = figures.get("many_busy")
    mem = many["memory"]

    def pair(name):
        return f"{one[name]['p50_ms']} / {one[name]['p99_ms']} | {many[name]['p50_ms']} / {many[name]['p99_ms']}"

    spread = lambda part: " ".join(f"{r['to_agent_p99_ms']}" for r in part["rounds"])  # noqa: E731
    return "\n".join([
        f"| measure (p50 / p99, ms) | 1 agent | {mem['agents']} agents | aim |",
        "|---|---|---|---|",
        f"| `reply` written -> agent's `on_reply` called | {pair('to_agent')} | p99 < {AIM_P99_MS:.0f} ms with 500, "
        f"in every round |",
        f"| ... p99 of each of {ROUNDS} rounds (spread) | {spread(one)} | {spread(many)} | |",
        f"| ... worst | {one['to_agent']['max_ms']} | {many['to_agent']['max_ms']} | |",
        *([f"| ... the same with {BUSY_LOOPS} busy loops beside it (`python3 -c 'while 1: pass'`): p50 / p99; "
           f"each round's p99 | | {busy['to_agent']['p50_ms']} / {busy['to_agent']['p99_ms']}; {spread(busy)} | "
           f"p99 < {AIM_BUSY_P99_MS:.0f} ms in every round |"] if busy else []),
        f"| `reply` op round trip (answered after the reply is on disk) | {pair('reply_round_trip')} | |",
        f"| floor: `ping` round trip, same daemon | {pair('ping_round_trip')} | |",
        f"| floor: raw unix-socket round trip, two Python processes | "
        f"{floor['raw_round_trip']['p50_ms']} / {floor['raw_round_trip']['p99_ms']} | | |",
        f"| floor: durable append of a reply record (write, fdatasync), between the replies | "
        f"{pair('durable_write_between')} | |",
        f"| floor: the same append on a quiet disk, before the daemon starts | "
        f"{floor['durable_write']['p50_ms']} / {floor['durable_write']['p99_ms']} | | |",
        *stalls_row(floor.get("stalls"), columns=3),
        "",
        f"Replies sent one at a time, round-robin over the agents in shuffled order, "
        f"{one['to_agent']['n']} to 1 agent and {many['to_agent']['n']} to {mem['agents']} agents; each agent "
        f"is a protocol job (bench/replies_agent.py on roost_agent.py, `python -I -S`). Starting "
        f"{mem['agents'] - 1} agents in batches of {BATCH}: {figures['start_many_s']} s. With {mem['agents']} "
        f"agents: daemon RSS {mem['daemon_rss_kib'] // 1024} MiB, keeper {mem['keeper_rss_kib'] // 1024} MiB, "
        f"each agent {mem['agent_rss_kib_mean'] / 1024:.1f} MiB on average.",
    ])


if __name__ == "__main__":
    result = measure()
    print(json.dumps(result, indent=1))
    print(report(result))


def headline(figures):
    """The figures `run.py --beside` puts side by side: (what, its text)."""
    rows = []
    for key, what in (("many", "reply -> on_reply, 500 agents"), ("many_busy", "... with 2 busy loops")):
        part = figures.get(key)
        if part:
            rounds = " ".join(str(one["to_agent_p99_ms"]) for one in part["rounds"])
            rows.append((f"{what}: p50 / p99 (ms); each round's p99",
                         f"{part['to_agent']['p50_ms']} / {part['to_agent']['p99_ms']}; {rounds}"))
    return rows
