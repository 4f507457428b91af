"""Issue 16 item 7: bad input, bounded. A number that overflows, 1001 rows or columns, an
over-long `after`, an oversized report's context, a catastrophic regex from `spawn`, bad
input to `roost mcp`, a rate table per job, and a refused `assign` that leaves the task
as it was: each answered with an error while the daemon (or the MCP server) goes on."""

import json
import os
import socket
import subprocess

import pytest

from conftest import PYTHON, ROOT, wait_for
from jobkit import dispatch, job_record, job_token, row, wait_row
from peerkit import lead, speaker
from protokit import start
from roost.client.connection import Refused


def raw_lines(daemon, *lines):
    """Each line sent on one raw connection, and its answer."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(30)
    sock.connect(daemon.socket)
    answers = []
    with sock, sock.makefile("rb") as reader:
        for line in lines:
            sock.sendall(line + b"\n")
            answers.append(json.loads(reader.readline()))
    return answers


def refused(call, code="bad_request"):
    with pytest.raises(Refused) as caught:
        call()
    assert caught.value.code == code, caught.value
    return caught.value.text


HUGE = b"1" + b"0" * 400


@pytest.mark.parametrize("number", [HUGE, HUGE + b".5", b"1e400", b"-1e400", b"18446744073709551616"])
def test_a_number_that_overflows_is_bad_request_and_the_connection_goes_on(daemon, number):
    bad, ping = raw_lines(daemon, b'{"id": 1, "op": "list", "args": {"limit": ' + number + b'}}',
                          b'{"id": 2, "op": "ping"}')
    # issue 28: refused with its own id (it was answered with id null)
    assert bad["ok"] is False and bad["code"] == "bad_request" and bad["id"] == 1
    assert "64 bits" in bad["error"] or "Infinity" in bad["error"]
    assert ping["ok"] is True and ping["id"] == 2
    [edge] = raw_lines(daemon, b'{"id": 9223372036854775807, "op": "ping"}')
    assert edge["ok"] is True and edge["id"] == 2 ** 63 - 1


def test_rows_and_cols_are_at_most_1000_at_dispatch_and_spawn(daemon):
    assert refused(lambda: dispatch(daemon, ["sleep", "30"], cols=1001)) == "cols must be at most 1000"
    assert refused(lambda: dispatch(daemon, ["sleep", "30"], rows=65535)) == "rows must be at most 1000"
    parent = lead(daemon)
    launch = {"kind": "shell", "cwd": "/tmp", "command": ["sleep", "30"], "env": {}, "name": "kid",
              "sessionFile": "", "origin": "bg", "cols": 1001}
    with speaker(daemon, parent) as client:
        assert refused(lambda: client.call("spawn", {"launch": launch})) == "cols must be at most 1000"
    job_id = dispatch(daemon, ["sleep", "30"], rows=1000, cols=1000)
    assert job_record(daemon.home, job_id)["launch"]["cols"] == 1000
    attached = daemon.client()
    with attached:
        attached.call("attach", {"id": job_id})
        assert refused(lambda: attached.call("attach-resize", {"id": job_id, "rows": 40, "cols": 1001})) == \
            "cols must be at most 1000"


def test_a_task_waits_on_at_most_50_tasks(daemon):
    first = daemon.call("task", action="add", title="first")["task"]["id"]
    assert refused(lambda: daemon.call("task", action="add", title="late", after=[first] * 51)) == \
        "after names at most 50 tasks (51 given)"
    assert first in daemon.call("task", action="add", title="fine", after=[first] * 50)["task"]["after"]


def test_a_reports_context_and_usage_are_bounded(daemon):
    job = start(daemon, "recorder")
    job.wait_row(lambda current: current.get("capabilities") is not None, "its hello")
    token = job_token(daemon.home, job.id)
    report = {"state": "working", "status": "busy"}

    def send(**fields):
        return daemon.call("report", id=job.id, token=token, report=dict(report, **fields))
    text = refused(lambda: send(usage={"note": "x" * 5000}))
    assert text.startswith("report.usage is ") and text.endswith("at most 4096")
    assert refused(lambda: send(context={"a": {"b": {"c": {"d": {"e": 1}}}}})) == \
        "report.context nests deeper than 4 levels"
    send(context={"tokens": 10, "window": 100, "percent": 10}, usage={"cost": {"input": 1}})


A_SCREEN = [PYTHON, "-c", "import time; print(('a' * 119 + '\\n') * 39, end='', flush=True); time.sleep(60)"]


def test_a_catastrophic_regex_from_spawn_does_not_stall_the_daemon(daemon):
    parent = lead(daemon)
    launch = {"kind": "shell", "cwd": "/tmp", "command": A_SCREEN, "env": {}, "name": "aaa", "sessionFile": "",
              "origin": "bg", "term": {"submit": "\r", "settleMs": 50, "working": "(a+)+b", "waiting": "(a|aa)+$x"}}
    with speaker(daemon, parent) as client:
        child = client.call("spawn", {"launch": launch})["id"]
        lookbehind = dict(launch, term={"submit": "\r", "settleMs": 50, "waiting": "(?<=x)y"})
        text = refused(lambda: client.call("spawn", {"launch": lookbehind}))
        assert text.startswith("term.waiting is not a regular expression") and "RE2" in text
    # The quiet screen is judged with both patterns matched over it: neither matches.
    wait_row(daemon, child, lambda current: current["state"] == "blocked"
             and (current.get("summary") or "").startswith("aaaa"), what="the screen of a's judged")
    for _ in range(20):
        with daemon.client(timeout=5) as client:       # a stalled loop would not answer
            assert client.call("ping")["pid"] > 0
    assert row(daemon, child)["status"] is None


def test_a_wire_pattern_ending_in_backslash_z_still_matches(daemon):
    job_id = dispatch(daemon, [PYTHON, "-c", "print('Choose [1-2]: ', end='', flush=True); input()"],
                      term={"submit": "\r", "settleMs": 50, "waiting": r"Choose \[\d-\d\]:\s*\Z"})
    wait_row(daemon, job_id, lambda current: current["status"] == "waiting", what="the prompt read as waiting")


def mcp_answers(lines, env_extra=None):
    env = dict(os.environ, PYTHONPATH=ROOT, ROOST_JOB_ID="j1", ROOST_JOB_TOKEN="t1",
               ROOST_SOCKET="/nonexistent/roost.sock", **(env_extra or {}))
    done = subprocess.run([PYTHON, "-m", "roost", "mcp"], input=b"\n".join(lines) + b"\n", env=env,
                          capture_output=True, timeout=60)
    return done.returncode, [json.loads(line) for line in done.stdout.splitlines()]


def test_roost_mcp_answers_bad_input_with_an_error_and_keeps_serving():
    lines = [b'{"jsonrpc": "2.0", "id": 1e400, "method": "ping"}',
             b'{"jsonrpc": "2.0", "id": "\\ud800", "method": "ping"}',
             b"[" * 100000 + b"]" * 100000,
             b'{"jsonrpc": "2.0", "id": NaN, "method": "ping"}',
             b'{"jsonrpc": "2.0", "id": 3, "method": "initialize", "params": {"protocolVersion": "\\udfff"}}',
             b'{"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "roost_send", '
             b'"arguments": {"to": "x", "message": ' + b'[' * 500 + b']' * 500 + b'}}}',
             b'{"jsonrpc": "2.0", "id": 2, "method": "ping"}']
    status, answers = mcp_answers(lines)
    assert status == 0
    assert [answer.get("id") for answer in answers] == [None, None, None, None, None, 4, 2]
    assert all(answer["error"]["code"] == -32700 for answer in answers[:5])
    assert "error" in answers[5] or answers[5]["result"]["isError"] is True
    assert answers[-1] == {"jsonrpc": "2.0", "id": 2, "result": {}}


def test_the_rate_limit_counts_a_foreground_process_once_whatever_name_it_registers(daemon):
    targets = [lead(daemon, f"t{number}") for number in range(3)]
    with daemon.client() as client:
        client.call("peer_register", {"name": "first", "cwd": "/tmp", "pid": os.getpid()})
        for number in range(30):
            client.call("send", {"to": targets[number % 3], "message": f"n{number}"})
        client.call("peer_register", {"name": "second", "cwd": "/tmp", "pid": os.getpid()})
        assert refused(lambda: client.call("send", {"to": targets[0], "message": "n30"}), "rate_limited")


def test_a_refused_assign_leaves_the_task_as_it_was(daemon):
    mute = start(daemon, "recorder")          # its hello does not say agent-items: it takes no messages
    mute.wait_row(lambda current: current.get("capabilities") is not None, "its hello")
    task = daemon.call("task", action="add", title="hand me over")["task"]
    refused(lambda: daemon.call("task", action="assign", id=task["id"], to=mute.id), "unsupported")
    [after] = [item for item in daemon.call("task", action="list")["tasks"] if item["id"] == task["id"]]
    assert after.get("assigned") is None and after["state"] == "open"


@pytest.mark.parametrize("cwd", ["/tmp/\0x", "relative/dir"])
def test_a_foreground_peer_with_a_cwd_that_is_no_path_is_refused_and_the_board_goes_on(daemon, cwd):
    """Found by bench/fuzz.py: a peer registered with a NUL in its cwd made every board
    action of its an internal error (its project is looked up from the cwd)."""
    with daemon.client() as client:
        assert refused(lambda: client.call("peer_register", {"name": "fg", "cwd": cwd, "pid": os.getpid()})) == \
            f"cwd must be an absolute path, not {cwd!r}"
        client.call("peer_register", {"name": "fg", "cwd": "/tmp", "pid": os.getpid()})
        assert client.call("task", {"action": "add", "title": "after a bad cwd"})["task"]["title"] == "after a bad cwd"
