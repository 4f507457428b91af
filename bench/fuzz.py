"""Fuzzing the wire: random and mutated request lines sent to a real daemon, and
JSON-RPC messages to a real `roost mcp` speaking for a real job (issue 16).

    .venv/bin/python bench/fuzz.py                       # 100,000 frames, 10,000 to roost mcp
    .venv/bin/python bench/fuzz.py --frames 2000 --mcp 200 --seed 7

The frames: valid ops with mutated arguments (wrong types, huge numbers, deep nesting,
lone surrogates, control characters, long strings, fields left out or added), broken
JSON (cut, bytes flipped, invalid UTF-8), raw numbers that overflow, nesting past the
limit, long lines. After each batch it checks that the daemon still answers `ping` on a
new connection; it fails on any answer that is an internal error, on an answer that does
not carry its request's own id (a well-formed request's, whatever its numbers: issue
28; null for a line that is not a JSON object), on a daemon (or an MCP server) that
stops answering, and on a traceback in the daemon's log. The seed is printed; the same
seed sends the same frames.
"""

import argparse
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PYTHON = sys.executable
BATCH = 1000
ANSWER_TIMEOUT = 15.0

# Ops and arguments that do something: the fuzzer mutates these. `shutdown` is left out
# (it ends the run); a launch names no program that exists, so none starts.
NO_PROGRAM = "/nonexistent/roost-fuzz-program"
BASE = [
    ("ping", {}), ("status", {}), ("list", {"all": True}), ("profiles", {"cwd": "/tmp"}),
    ("doctor", {}), ("events", {"after": 0, "limit": 10}), ("resolve", {"query": "JOB"}),
    ("peek", {"id": "JOB", "lines": 5}), ("keys", {"id": "JOB", "keys": ["a"]}),
    ("attach-resize", {"id": "JOB", "rows": 40, "cols": 120}), ("detach", {"id": "JOB"}),
    ("reply", {"id": "JOB", "text": "hello", "mode": "steer"}),
    ("pin", {"id": "JOB", "pinned": True}), ("rename", {"id": "JOB", "name": "fuzzed"}),
    ("reorder", {"ids": ["JOB"], "key": "k"}), ("respawn", {"id": "gone", "prompt": "p"}),
    ("stop", {"id": "gone"}), ("rm", {"id": "gone"}),
    ("dispatch", {"kind": "shell", "cwd": "/tmp", "command": [NO_PROGRAM], "env": {}, "name": "f",
                  "sessionFile": "", "origin": "dispatch", "rows": 40, "cols": 120,
                  "term": {"submit": "\r", "settleMs": 10, "waiting": "^> $", "working": "(a+)+b"},
                  "task": "do it"}),
    ("hello", {"protocol": 1, "agent": {"name": "fuzz", "version": "1"}, "capabilities": ["report"]}),
    ("report", {"id": "JOB", "token": "TOKEN", "report": {"state": "working", "status": "busy",
                                                            "summary": "s", "context": {"tokens": 1}}}),
    ("ack", {"id": "JOB", "token": "TOKEN", "seq": 1}),
    ("task", {"action": "list"}), ("task", {"action": "add", "title": "t", "detail": "d", "after": []}),
    ("task", {"action": "claim", "id": 1}), ("task", {"action": "done", "id": 1, "result": "r"}),
    ("task", {"action": "assign", "id": 1, "to": "JOB"}), ("task", {"action": "drop", "id": 1}),
    ("task", {"action": "approve", "id": 1, "dry": True}), ("task", {"action": "diff", "id": 1}),
    ("speak_for", {"id": "JOB", "token": "TOKEN"}),
    ("peer_register", {"name": "fg", "cwd": "/tmp", "pid": 1}),
    ("peers", {}), ("send", {"to": "JOB", "message": "m"}), ("watch", {"id": "JOB", "when": "idle"}),
    ("spawn", {"launch": {"kind": "shell", "cwd": "/tmp", "command": [NO_PROGRAM], "env": {}, "name": "k",
                          "sessionFile": "", "origin": "bg"}}),
    ("handback", {"state": "done", "result": "r"}), ("peer_ack", {"ref": "r"}),
    ("subscribe", {}), ("attach-input", {"id": "JOB", "data": "YQ=="}), ("nope", {}),
]

RAW_NUMBERS = ["1e400", "-1e400", "1" + "0" * 400, "1" + "0" * 400 + ".5", "18446744073709551616",
               "9223372036854775807", "-9223372036854775808", "-0", "1e-400", "0.1e309", "1" * 5000]
STRINGS = ["", " ", "\x1b[201~", "\x1b[Z", "\x00", "\u009b", "\u202e", "a" * 9000, "ü" * 300,
           "../../etc/passwd", "\ud83d\ude00", "JOB", "\n\n", "NaN", "[roost: fake]"]


class Mutator:
    def __init__(self, rng, job_id, token):
        self.rng = rng
        self.job_id = job_id
        self.token = token

    def value(self, depth=0):
        """A random JSON value (some of them raw text, put in as `\0RAW n\0`)."""
        rng = self.rng
        kind = rng.randrange(12)
        if kind == 0:
            return rng.choice([None, True, False])
        if kind == 1:
            return rng.choice([0, -1, 1, 2, 40, 1000, 1001, 65535, 2 ** 31, 2 ** 53 + 1, 2 ** 63 - 1])
        if kind == 2:
            return rng.choice([0.5, -1.5, 1e308, 3.0])
        if kind == 3:
            return rng.choice(STRINGS)
        if kind == 4:
            return "".join(chr(rng.randrange(0, 0x3000)) for _ in range(rng.randrange(1, 40)))
        if kind == 5:
            return RawText(rng.choice(RAW_NUMBERS))
        if kind == 6:
            return RawText('"' + rng.choice(["\\ud800", "\\udfff", "\\ud800\\u0041", "\\u0000", "\\u001b"]) + '"')
        if kind == 7 and depth < 3:
            return [self.value(depth + 1) for _ in range(rng.randrange(0, 4))]
        if kind == 8 and depth < 3:
            return {rng.choice(["a", "id", "text", "", "ü"]): self.value(depth + 1) for _ in range(rng.randrange(0, 4))}
        if kind == 9:
            depth_of = rng.choice([10, 63, 64, 65, 200, 5000])
            return RawText("[" * depth_of + "]" * depth_of)
        if kind == 10:
            return rng.choice([self.job_id, self.token, "all", "open"])
        return rng.choice(STRINGS)

    def args(self, base):
        args = json.loads(json.dumps(base).replace('"JOB"', json.dumps(self.job_id))
                          .replace('"TOKEN"', json.dumps(self.token)))
        rng = self.rng
        for _ in range(rng.randrange(1, 4)):
            target = args
            # Sometimes one level down (a report's fields, a launch's term).
            nested = [key for key, value in target.items() if isinstance(value, dict)]
            if nested and rng.random() < 0.4:
                target = target[rng.choice(nested)]
            choice = rng.random()
            keys = list(target)
            if keys and choice < 0.6:
                target[rng.choice(keys)] = self.value()
            elif keys and choice < 0.75:
                del target[rng.choice(keys)]
            else:
                target[rng.choice(["extra", "id", "rows", "cols", "limit", "text"])] = self.value()
        return args

    def frame(self):
        rng = self.rng
        kind = rng.random()
        op, base = rng.choice(BASE)
        request = {"id": rng.choice([rng.randrange(10 ** 6), "s", None, RawText("1e400"), [1], {"a": 1}]),
                   "op": op, "args": self.args(base) if kind < 0.7 else base}
        if kind < 0.02:
            request["op"] = self.value()
        if 0.7 <= kind < 0.72:
            request["args"] = self.value()
        line = encode(request)
        if kind >= 0.85:
            line = self.broken(line)
        return line

    def broken(self, line):
        rng = self.rng
        way = rng.randrange(6)
        if way == 0:
            return line[:rng.randrange(1, max(2, len(line)))]
        if way == 1:
            data = bytearray(line)
            for _ in range(rng.randrange(1, 5)):
                data[rng.randrange(len(data))] = rng.randrange(256)
            return bytes(data).replace(b"\n", b" ")
        if way == 2:
            return line.replace(b'"', b"\xed\xa0\x80", 1)        # a surrogate as raw UTF-8: invalid
        if way == 3:
            return b'{"id": 1, "op": "ping", "args": {"x": "' + b"x" * rng.choice([10 ** 5, 10 ** 6, 3 * 10 ** 6, 5 * 10 ** 6]) + b'"}}'
        if way == 4:
            return rng.choice([b"", b"null", b"[]", b"1", b'"ping"', b"{", b"}", b"NaN", b"[" * 100000])
        return line + b"garbage"


class RawText(str):
    """Text put into a frame as it is (a number JSON cannot hold, an escape)."""


def encode(request):
    raws = []

    def default(value):
        raise TypeError(value)

    def walk(value):
        if isinstance(value, RawText):
            raws.append(str(value))
            return f"\0RAW{len(raws) - 1}\0"
        if isinstance(value, dict):
            return {key: walk(item) for key, item in value.items()}
        if isinstance(value, list):
            return [walk(item) for item in value]
        return value
    text = json.dumps(walk(request), ensure_ascii=False, default=default)
    for index, raw in enumerate(raws):
        text = text.replace(json.dumps(f"\0RAW{index}\0"), raw)
    return text.encode("utf-8", "surrogatepass")


# -- the daemon side ------------------------------------------------------------------

class Target:
    """A daemon to fuzz: its socket, its home (for its log) and the environment of its
    clients."""

    def __init__(self, socket_path, home, env):
        self.socket = socket_path
        self.home = home
        self.env = env

    def connect(self, timeout=ANSWER_TIMEOUT):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(timeout)
        sock.connect(self.socket)
        return sock

    def answers_ping(self, timeout=5.0):
        try:
            with self.connect(timeout) as sock:
                sock.sendall(b'{"id":"alive","op":"ping"}\n')
                return b'"ok":true' in sock.makefile("rb").readline()
        except OSError:
            return False

    def call(self, op, **args):
        with self.connect() as sock:
            sock.sendall(json.dumps({"id": 1, "op": op, "args": args}).encode() + b"\n")
            answer = json.loads(sock.makefile("rb").readline())
        if not answer["ok"]:
            raise SystemExit(f"{op} refused: {answer}")
        return answer["result"]

    def tracebacks(self):
        try:
            with open(os.path.join(self.home, "daemon.log"), encoding="utf-8", errors="replace") as handle:
                text = handle.read()
        except FileNotFoundError:
            return ""
        return text if "Traceback" in text else ""



class Daemon(Target):
    """A daemon of the fuzzer's own, on a home of its own."""

    def __init__(self):
        self.base = tempfile.mkdtemp(prefix="rfz-", dir="/tmp")
        home = os.path.join(self.base, "h")
        env = dict(os.environ, ROOST_HOME=home, PYTHONPATH=ROOT)
        env.pop("ROOST_SOCKET", None)
        super().__init__(os.path.join(home, "roost.sock"), home, env)
        self.log = open(os.path.join(self.base, "daemon.err"), "wb")
        self.process = subprocess.Popen([PYTHON, "-m", "roost", "daemon", "--foreground"], env=env,
                                        stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 20
        while not self.answers_ping():
            if time.monotonic() > deadline:
                raise SystemExit("the daemon did not start")
            time.sleep(0.05)

    def stop(self):
        try:
            self.call("shutdown")
        except (OSError, SystemExit, ValueError):
            pass
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, 9)
        shutil.rmtree(self.base, ignore_errors=True)


class Sender:
    """One connection that sends a frame and then a sentinel ping, and reads every line
    up to the sentinel's answer: the frame's answers, whatever it made of them."""

    def __init__(self, daemon):
        self.daemon = daemon
        self.sock = None
        self.reader = None
        self.sentinel = 0

    def send(self, frame):
        if self.sock is None:
            self.sock = self.daemon.connect()
            self.reader = self.sock.makefile("rb")
        self.sentinel += 1
        marker = f"fuzz-sentinel-{self.sentinel}"
        try:
            self.sock.sendall(frame + b"\n" + json.dumps({"id": marker, "op": "ping"}).encode() + b"\n")
            answers = []
            while True:
                line = self.reader.readline()
                if not line:
                    self.close()
                    return answers, "closed"
                answer = json.loads(line)
                if answer.get("id") == marker:
                    return answers, "ok"
                if "event" not in answer:
                    answers.append(answer)
        except socket.timeout:
            self.close()
            return [], "timeout"
        except (BrokenPipeError, ConnectionResetError):
            self.close()
            return [], "closed"

    def close(self):
        if self.sock is not None:
            try:
                self.sock.close()
            except OSError:
                pass
        self.sock = self.reader = None


MAX_LINE = 4 * 1024 * 1024


def _refuse_constant(name):
    raise ValueError(name)


def expected_id(frame):
    """The id the answer to `frame` must carry: the request's own when the frame is a JSON
    object the daemon can read (one line of at most 4 MiB, UTF-8), null otherwise (and
    for an id that is an object or a list)."""
    if len(frame) > MAX_LINE:
        return None
    try:
        request = json.loads(frame.decode("utf-8"), strict=False, parse_constant=_refuse_constant)
    except (ValueError, RecursionError):
        return None
    if not isinstance(request, dict) or isinstance(request.get("id"), (dict, list)):
        return None
    return request.get("id")


def fuzz_daemon(daemon, rng, frames, job_id, token, report):
    mutator = Mutator(rng, job_id, token)
    sender = Sender(daemon)
    codes = {}
    outcomes = {"ok": 0, "closed": 0, "timeout": 0}
    problems = []
    for number in range(frames):
        frame = mutator.frame()
        answers, outcome = sender.send(frame)
        outcomes[outcome] += 1
        if outcome == "timeout":
            problems.append(("no answer within the timeout", frame[:300]))
        for answer in answers:
            code = answer.get("code") if not answer.get("ok") else "ok"
            codes[code] = codes.get(code, 0) + 1
            if code == "internal":
                problems.append((answer.get("error"), frame[:300]))
            want = expected_id(frame)
            if answer.get("id") != want:
                problems.append((f"answered with id {answer.get('id')!r}, not its own {want!r}", frame[:300]))
        if number % 50 == 49:
            sender.close()          # a new connection now and then: a hello or a speak_for sticks
        if (number + 1) % BATCH == 0:
            if not daemon.answers_ping():
                problems.append(("the daemon stopped answering ping", frame[:300]))
                break
            if daemon.tracebacks():
                problems.append(("a traceback in the daemon's log", daemon.tracebacks()[-2000:].encode()))
                break
            report(number + 1, codes, outcomes)
        if len(problems) >= 20:
            break
    sender.close()
    return codes, outcomes, problems


# -- the MCP side ---------------------------------------------------------------------

MCP_BASE = [
    {"jsonrpc": "2.0", "id": 1, "method": "ping"},
    {"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": {"protocolVersion": "2025-06-18",
                                                                    "capabilities": {}, "clientInfo": {"name": "f"}}},
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "id": 3, "method": "tools/list"},
    {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "roost_peers", "arguments": {}}},
    {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "roost_send",
                                                                    "arguments": {"to": "JOB", "message": "hi"}}},
    {"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {"name": "roost_tasks", "arguments": {}}},
    {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "roost_claim", "arguments": {"id": 1}}},
    {"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {"name": "roost_watch",
                                                                    "arguments": {"id": "JOB", "when": "idle"}}},
]


def fuzz_mcp(daemon, rng, frames, job_id, token, report):
    env = dict(daemon.env, ROOST_JOB_ID=job_id, ROOST_JOB_TOKEN=token, ROOST_SOCKET=daemon.socket)
    server = subprocess.Popen([PYTHON, "-m", "roost", "mcp"], env=env, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    mutator = Mutator(rng, job_id, token)
    problems = []
    codes = {}
    sent = 0

    def exchange(line, marker):
        server.stdin.write(line + b"\n" + json.dumps({"jsonrpc": "2.0", "id": marker, "method": "ping"}).encode()
                           + b"\n")
        server.stdin.flush()
        answers = []
        while True:
            out = server.stdout.readline()
            if not out:
                return None
            answer = json.loads(out)
            if isinstance(answer, dict) and answer.get("id") == marker:
                return answers
            answers.extend(answer if isinstance(answer, list) else [answer])

    exchange(encode(MCP_BASE[1]), "start")
    try:
        for number in range(frames):
            message = json.loads(json.dumps(rng.choice(MCP_BASE)).replace('"JOB"', json.dumps(job_id)))
            if rng.random() < 0.7:
                field = rng.choice(["id", "method", "params", "jsonrpc", "extra"])
                message[field] = mutator.value()
                if "params" in message and isinstance(message["params"], dict) and rng.random() < 0.5:
                    message["params"]["arguments"] = mutator.value()
            line = encode(message)
            if rng.random() < 0.15:
                line = mutator.broken(line).replace(b"\n", b" ")[:2 * 1024 * 1024]
            answers = exchange(line, f"mcp-sentinel-{number}")
            sent += 1
            if answers is None:
                problems.append(("roost mcp ended", line[:300]))
                break
            for answer in answers:
                code = (answer.get("error") or {}).get("code", "result") if isinstance(answer, dict) else "?"
                codes[code] = codes.get(code, 0) + 1
                if code == -32603:
                    problems.append(("an internal error", line[:300]))
            if (number + 1) % BATCH == 0:
                report(number + 1, codes, {})
    finally:
        server.stdin.close()
        server.wait(10)
    return codes, sent, problems


def say(text):
    print(text, flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description="fuzz roost's wire and roost mcp")
    parser.add_argument("--frames", type=int, default=100_000)
    parser.add_argument("--mcp", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=None)
    options = parser.parse_args(argv)
    seed = options.seed if options.seed is not None else random.SystemRandom().randrange(2 ** 32)
    say(f"seed {seed} (again: bench/fuzz.py --seed {seed} --frames {options.frames} --mcp {options.mcp})")
    daemon = Daemon()
    try:
        problems = run(daemon, seed, options.frames, options.mcp)
    finally:
        daemon.stop()
    return 1 if problems else 0


def run(daemon, seed, frames, mcp_frames, say=say):
    """Fuzz `daemon` (a Target) with `frames` request lines and `mcp_frames` messages to
    a roost mcp of a job of its; the problems found, each (what, frame)."""
    rng = random.Random(seed)
    job_id = daemon.call("dispatch", kind="shell", cwd="/tmp", command=["sleep", "3600"], env={},
                         name="target", sessionFile="", origin="dispatch")["id"]
    # Kept apart from job.json (roost.jobs.trusted).
    with open(os.path.join(daemon.home, "private", f"{job_id}.json"), encoding="utf-8") as handle:
        token = json.load(handle)["token"]
    started = time.monotonic()

    def report(count, codes, outcomes):
        say(f"  {count} frames, {time.monotonic() - started:.0f} s: {codes} {outcomes}")
    codes, outcomes, problems = fuzz_daemon(daemon, rng, frames, job_id, token, report)
    say(f"daemon: {sum(outcomes.values())} frames in {time.monotonic() - started:.1f} s; answers by code "
        f"{codes}; connections {outcomes}")
    started = time.monotonic()
    mcp_codes, mcp_sent, mcp_problems = fuzz_mcp(daemon, rng, mcp_frames, job_id, token, report)
    say(f"roost mcp: {mcp_sent} frames in {time.monotonic() - started:.1f} s; answers by code {mcp_codes}")
    if not daemon.answers_ping():
        problems.append(("the daemon stopped answering ping at the end", b""))
    problems += mcp_problems
    for what, frame in problems:
        say(f"PROBLEM: {what}\n  frame: {frame!r}")
    say("found problems" if problems else "found nothing")
    return problems


if __name__ == "__main__":
    sys.exit(main())
