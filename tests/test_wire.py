"""The wire against a real daemon: envelope, order, bad input, and every socket limit at
its bound and one past it (spec "The wire", "Others")."""

import json
import os
import select
import resource
import socket
import sys
import time

import pytest

from conftest import wait_for
from jobkit import job_token

MiB = 1024 * 1024


def raw(daemon):
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(30)
    sock.connect(daemon.socket)
    return sock


def read_lines(sock, count):
    data = b""
    while data.count(b"\n") < count:
        chunk = sock.recv(1 << 20)
        if not chunk:
            break
        data += chunk
    return [json.loads(line) for line in data.split(b"\n")[:count] if line]


def closed_by_peer(sock, timeout=10):
    """True once the daemon has closed this connection (EOF or reset)."""
    sock.settimeout(timeout)
    try:
        while True:
            chunk = sock.recv(1 << 20)
            if not chunk:
                return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except socket.timeout:
        return False


def test_envelope_ok_and_unknown_fields_ignored(daemon):
    sock = raw(daemon)
    sock.sendall(b'{"id": 7, "op": "ping", "args": {}, "extra": [1, 2]}\n')
    [answer] = read_lines(sock, 1)
    assert answer["id"] == 7 and answer["ok"] is True
    assert answer["result"]["pid"] > 0 and answer["result"]["version"]
    sock.sendall(b'{"id": "x", "op": "nope"}\n')
    [answer] = read_lines(sock, 1)
    assert answer == {"id": "x", "ok": False, "error": "unknown op: nope", "code": "bad_request"}


def test_pipelined_requests_are_answered_in_order(daemon):
    sock = raw(daemon)
    ops = ["ping", "status", "hello", "ping"] * 250
    sock.sendall(b"".join(json.dumps({"id": n, "op": op, "args": {"protocol": 1}}).encode() + b"\n"
                          for n, op in enumerate(ops)))
    answers = read_lines(sock, len(ops))
    assert [a["id"] for a in answers] == list(range(len(ops)))
    assert all(a["ok"] for a in answers)


BAD_LINES = [
    (b"{not json", "malformed"),
    (b'{"id": 1, "op": "ping"', "truncated"),
    (b'\xff\xfe{"id": 1, "op": "ping"}', "invalid utf-8"),
    (b'{"id": 1, "op": "ping", "args": {"x": NaN}}', "NaN"),
    (b'{"id": 1, "op": "ping", "args": {"x": Infinity}}', "Infinity"),
    (b'{"id": 1, "op": "ping", "args": ' + b"[" * 5000 + b"]" * 5000 + b"}", "deep nesting"),
    (b'{"id": 1, "op": "ping", "args": ' + b"[" * 100 + b"]" * 100 + b"}", "nesting past 64"),
    (b'[1, 2, 3]', "not an object"),
    (b'"ping"', "a string"),
    (b'{"id": 1, "op": 5}', "op not a string"),
    (b'{"id": 1}', "no op"),
    (b'{"id": 1, "op": "ping", "args": [1]}', "args not an object"),
    (b'{"id": 1, "op": "hello", "args": {"protocol": "one"}}', "wrong type"),
    (b'{"id": 1, "op": "shutdown", "args": {"keepWorkers": "yes"}}', "wrong type for a flag"),
]


@pytest.mark.parametrize("line,why", BAD_LINES, ids=[why for _, why in BAD_LINES])
def test_bad_input_is_refused_and_harms_no_one(daemon, line, why):
    other = daemon.client()
    assert other.call("ping")["pid"]
    sock = raw(daemon)
    sock.sendall(line + b"\n")
    [answer] = read_lines(sock, 1)
    assert answer["ok"] is False and answer["code"] == "bad_request", answer
    # The same connection goes on serving, and so does every other one.
    sock.sendall(b'{"id": 2, "op": "ping"}\n')
    [answer] = read_lines(sock, 1)
    assert answer["ok"] is True and answer["id"] == 2
    assert other.call("ping")["pid"]
    assert daemon.process.poll() is None


# A lone surrogate ("\\ud800" without its pair) is valid JSON and not Unicode: decoded,
# a string holding it could not be encoded again (an answer, a row, a state file).
LONE = "\\ud800"
SURROGATE_REQUESTS = {
    "the id": '"id": "x%sA", "op": "ping", "args": {}',
    "hello's agent name": '"id": 1, "op": "hello", "args": {"protocol": 1, "agent": {"name": "a%s"}}',
    "a job's name": '"id": 1, "op": "dispatch", "args": {"kind": "shell", "cwd": "/tmp", "command": ["true"], '
                     '"env": {}, "name": "n%s", "sessionFile": "", "origin": "dispatch"}',
    "an env value": '"id": 1, "op": "dispatch", "args": {"kind": "shell", "cwd": "/tmp", "command": ["true"], '
                     '"env": {"A": "v%s"}, "name": "", "sessionFile": "", "origin": "dispatch"}',
    "an env name": '"id": 1, "op": "dispatch", "args": {"kind": "shell", "cwd": "/tmp", "command": ["true"], '
                    '"env": {"A%s": "v"}, "name": "", "sessionFile": "", "origin": "dispatch"}',
    "a command word": '"id": 1, "op": "dispatch", "args": {"kind": "shell", "cwd": "/tmp", "command": ["t%s"], '
                       '"env": {}, "name": "", "sessionFile": "", "origin": "dispatch"}',
    "a cwd": '"id": 1, "op": "dispatch", "args": {"kind": "shell", "cwd": "/tmp/%s", "command": ["true"], '
              '"env": {}, "name": "", "sessionFile": "", "origin": "dispatch"}',
    "a reply's text": '"id": 1, "op": "reply", "args": {"id": "JOB", "text": "t%s"}',
    "a rename": '"id": 1, "op": "rename", "args": {"id": "JOB", "name": "n%s"}',
    "a peek's id": '"id": 1, "op": "peek", "args": {"id": "J%s"}',
    "an attach's id": '"id": 1, "op": "attach", "args": {"id": "J%s"}',
    "a report's summary": '"id": 1, "op": "report", "args": {"id": "JOB", "token": "TOKEN", "report": '
                           '{"state": "working", "summary": "s%s"}}',
    "a report's choice": '"id": 1, "op": "report", "args": {"id": "JOB", "token": "TOKEN", "report": '
                          '{"state": "blocked", "choices": ["c%s"]}}',
    "an ack's token": '"id": 1, "op": "ack", "args": {"id": "JOB", "token": "T%s", "seq": 1}',
}


@pytest.mark.parametrize("where", sorted(SURROGATE_REQUESTS))
def test_a_lone_surrogate_anywhere_in_a_request_is_refused_and_harms_no_one(daemon, where):
    job = daemon.call("dispatch", kind="shell", cwd="/tmp", command=["sleep", "60"], env={}, name="target",
                      sessionFile="", origin="dispatch")["id"]
    token = job_token(daemon.home, job)
    before = daemon.call("list", all=True)["jobs"]
    template = SURROGATE_REQUESTS[where]
    line = "{" + (template % LONE).replace("JOB", job).replace("TOKEN", token) + "}\n"
    sock = raw(daemon)
    sock.settimeout(10)
    sock.sendall(line.encode("ascii"))
    [answer] = read_lines(sock, 1)
    assert answer["ok"] is False and answer["code"] == "bad_request", answer
    # The same connection goes on serving; nothing changed; every row still encodes.
    sock.sendall(b'{"id": 2, "op": "ping"}\n')
    [answer] = read_lines(sock, 1)
    assert answer["ok"] is True and answer["id"] == 2
    assert daemon.call("list", all=True)["jobs"] == before
    with open(os.path.join(daemon.home, "daemon.log"), "rb") as handle:
        handle.read().decode("utf-8")     # the log reads back as text


def test_a_surrogate_pair_is_taken(daemon):
    sock = raw(daemon)
    sock.sendall(b'{"id": "\\ud83d\\ude00", "op": "ping", "args": {}}\n')
    [answer] = read_lines(sock, 1)
    assert answer["ok"] is True and answer["id"] == "\U0001F600"


def test_a_line_of_exactly_4_mib_is_taken(daemon):
    head = b'{"id": 1, "op": "ping", "args": {"pad": "'
    tail = b'"}}'
    line = head + b"x" * (4 * MiB - len(head) - len(tail)) + tail
    assert len(line) == 4 * MiB
    sock = raw(daemon)
    sock.sendall(line + b"\n")
    [answer] = read_lines(sock, 1)
    assert answer["ok"] is True


def test_a_line_one_byte_over_4_mib_ends_the_connection(daemon):
    head = b'{"id": 1, "op": "ping", "args": {"pad": "'
    tail = b'"}}'
    line = head + b"x" * (4 * MiB + 1 - len(head) - len(tail)) + tail
    assert len(line) == 4 * MiB + 1
    sock = raw(daemon)
    sock.sendall(line + b"\n")
    assert closed_by_peer(sock)
    assert daemon.call("ping")["pid"]


def _rss_kib(pid):
    with open(f"/proc/{pid}/status") as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


def test_an_endless_line_is_cut_off_without_reading_it_into_memory(daemon):
    before = _rss_kib(daemon.process.pid)
    sock = raw(daemon)
    sock.settimeout(10)
    chunk = b"x" * MiB
    sent = 0
    with pytest.raises((BrokenPipeError, ConnectionResetError)):
        for _ in range(256):                     # up to 256 MiB: the daemon stops long before
            sock.sendall(chunk)
            sent += len(chunk)
    assert sent < 16 * MiB
    assert _rss_kib(daemon.process.pid) - before < 32 * 1024
    assert daemon.call("ping")["pid"]


def _with_fd_room(count):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < count:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, count), hard))


def test_1024_connections_are_served_and_the_next_is_refused(daemon):
    _with_fd_room(4096)
    conns = []
    try:
        for n in range(1024):
            conns.append(daemon.client())
        for client in conns:   # every one accepted and counted before the next arrives
            assert client.call("ping")["pid"]
        extra = raw(daemon)
        answers = read_lines(extra, 1)
        assert answers and answers[0]["code"] == "limit", answers
        assert closed_by_peer(extra)
        # One leaves; a newcomer is served again.
        conns.pop().close()

        def newcomer_served():
            try:
                with daemon.client(timeout=5) as client:
                    return client.call("ping")
            except Exception:
                return None

        wait_for(newcomer_served, what="a connection to be served after one closed")
    finally:
        for client in conns:
            client.close()


def test_at_the_limit_clients_that_left_free_their_places_at_once(daemon):
    _with_fd_room(4096)
    conns = [daemon.client() for _ in range(1024)]
    try:
        assert conns[-1].call("ping")["pid"]
        for client in conns[:20]:
            client.close()
        # No wait: the daemon may not have read those ends yet when the newcomers arrive.
        newcomers = [daemon.client() for _ in range(20)]
        conns = conns[20:] + newcomers
        for client in newcomers:
            assert client.call("ping")["pid"]
    finally:
        for client in conns:
            client.close()


def _unread_answers(daemon, megabytes):
    """Ask for `megabytes` answers of 1 MiB each (the id is echoed) and read none."""
    sock = raw(daemon)
    big_id = "i" * (MiB - 64)
    try:
        sock.sendall(b"".join(json.dumps({"id": f"{n}{big_id}", "op": "ping"}).encode() + b"\n"
                              for n in range(megabytes)))
    except (BrokenPipeError, ConnectionResetError):
        pass   # dropped while still asking: that is the point past the limit
    return sock


def test_a_client_with_16_mib_unread_is_kept(daemon):
    sock = _unread_answers(daemon, 15)
    assert daemon.call("ping")["pid"]       # the daemon has answered everything by now
    answers = read_lines(sock, 15)
    assert len(answers) == 15 and all(a["ok"] for a in answers)


def test_a_client_with_more_than_16_mib_unread_is_dropped(daemon):
    sock = _unread_answers(daemon, 20)
    assert daemon.call("ping")["pid"]
    sock.settimeout(10)
    data = b""
    try:
        while True:
            chunk = sock.recv(1 << 20)
            if not chunk:
                break
            data += chunk
    except (ConnectionResetError, socket.timeout):
        pass
    assert data.count(b"\n") < 20


def test_at_most_256_requests_in_flight_then_the_connection_is_not_read(daemon):
    """A slow op (stopping a job that ignores SIGTERM) holds the queue; the daemon takes
    256 requests and reads no further until they are answered."""
    agent = os.path.join(os.path.dirname(os.path.abspath(__file__)), "agents", "ignores_term.py")
    job = daemon.call("dispatch", kind="shell", cwd="/", sessionFile="", env={}, name="slow-stop",
                      origin="dispatch", command=[sys.executable, agent])
    wait_for(lambda: "ignoring" in daemon.call("peek", id=job["id"]).get("text", ""),
             what="the job to start")
    sock = raw(daemon)
    sock.sendall(json.dumps({"id": "stop", "op": "stop", "args": {"id": job["id"]}}).encode() + b"\n")
    pad = "p" * (64 * 1024)
    line = json.dumps({"id": 0, "op": "ping", "args": {"pad": pad}}).encode() + b"\n"
    sock.setblocking(False)
    written = 0            # whole request lines the socket took
    view = memoryview(b"")
    stalled = False
    deadline = time.monotonic() + 2.5          # well inside the 3 s grace of the stop
    while time.monotonic() < deadline and written < 2000:
        if not view:
            view = memoryview(line)
        try:
            view = view[sock.send(view):]
            if not view:
                written += 1
        except BlockingIOError:
            # Full for a moment, or for good? The daemon reads in bursts: wait a while.
            _, writable, _ = select.select([], [sock], [], 0.5)
            if not writable:
                stalled = True
                break
    rest = view.tobytes()
    assert stalled, f"wrote {written} requests and the daemon kept reading"
    # 256 in flight (the stop and 255 pings) plus what the socket buffers and one read hold.
    assert 255 <= written <= 255 + 16, written
    sock.setblocking(True)
    sock.settimeout(30)
    sock.sendall(rest)
    total = written + (1 if rest else 0) + 1
    answers = read_lines(sock, total)
    assert answers[0]["id"] == "stop" and answers[0]["ok"] is True
    assert len(answers) == total and all(a["ok"] for a in answers)
