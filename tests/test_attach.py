"""peek and attach end to end: a real daemon, jobs started with the spec's `dispatch`,
the ops on the socket and the CLI driven through a pty of the test's own."""

import fcntl
import json
import os
import pty
import select
import signal
import struct
import subprocess
import termios
import time

import pytest

from attachkit import Attacher, encoded
from conftest import AGENTS, PYTHON, wait_for
from roost.client.connection import Refused


def dispatch(daemon, agent, *args, term=None, name="agent"):
    launch = {"kind": "shell", "cwd": "/tmp", "command": [PYTHON, os.path.join(AGENTS, agent), *args],
              "env": {}, "name": name, "sessionFile": "", "origin": "dispatch",
              "term": term or {"settleMs": 200}}
    return daemon.call("dispatch", **launch)["id"]


def row(daemon, job_id):
    return next(job for job in daemon.call("list", all=True)["jobs"] if job["id"] == job_id)


def wait_waiting(daemon, job_id, timeout=15):
    return wait_for(lambda: row(daemon, job_id)["status"] == "waiting" and row(daemon, job_id),
                    timeout=timeout, what=f"job {job_id} to wait")


def test_peek_shows_the_screen_and_its_last_lines(daemon):
    job_id = dispatch(daemon, "asks_question.py")
    wait_for(lambda: "Choose [1-3]:" in daemon.call("peek", id=job_id)["text"], what="the question")
    text = daemon.call("peek", id=job_id)["text"]
    assert text.splitlines()[-5:] == ["Which database should I use?", "  1) postgres", "  2) sqlite",
                                      "  3) none", "Choose [1-3]:"]
    assert daemon.call("peek", id=job_id, lines=2)["text"] == "  3) none\nChoose [1-3]:"
    by_name = daemon.call("peek", id="agent")
    assert by_name["id"] == job_id
    with pytest.raises(Refused) as refused:
        daemon.call("peek", id="no-such-job")
    assert refused.value.code == "not_found"
    with pytest.raises(Refused) as refused:
        daemon.call("peek", id=job_id, lines=0)
    assert refused.value.code == "bad_request"


def test_peek_from_the_cli(daemon):
    job_id = dispatch(daemon, "prompt_echo.py", "0.1")
    wait_waiting(daemon, job_id)
    daemon.call("reply", id=job_id, text="from the cli")
    wait_for(lambda: "echo: from the cli" in daemon.call("peek", id=job_id)["text"])
    shown = daemon.cli("peek", job_id, "--lines", "2")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.decode() == "echo: from the cli\n>\n"
    as_json = daemon.cli("peek", job_id, "--json")
    assert json.loads(as_json.stdout) == {"id": job_id, "text": daemon.call("peek", id=job_id)["text"]}
    missing = daemon.cli("peek", "nope")
    assert missing.returncode == 1 and b"not_found" in missing.stderr


def test_peek_of_an_ended_job_rebuilds_its_last_screen(daemon):
    job_id = dispatch(daemon, "prompt_echo.py", "0.1")
    wait_waiting(daemon, job_id)
    daemon.call("reply", id=job_id, text="quit")
    wait_for(lambda: row(daemon, job_id)["state"] == "done", what="the job to end")
    assert daemon.call("peek", id=job_id)["text"].endswith("> quit\nbye")


def test_attach_repaints_takes_keys_and_detaches(daemon):
    job_id = dispatch(daemon, "prompt_echo.py", "0.1")
    wait_waiting(daemon, job_id)
    attacher = Attacher(daemon, job_id, rows=30, cols=100)
    try:
        assert attacher.result == {"id": job_id, "name": "agent", "detachKey": "^q"}
        attacher.pump_until(lambda: b">" in attacher.output, what="the repaint")
        assert attacher.output.startswith(b"\x1b[0m")          # a repaint, not the raw log
        assert attacher.send(b"typed live\r")["taken"] is True
        attacher.pump_until(lambda: b"echo: typed live" in attacher.output)
        assert attacher.client.call("attach-resize", {"id": job_id, "rows": 20, "cols": 60}) == {"id": job_id}
        assert attacher.client.call("detach", {"id": job_id}) == {"id": job_id}
        with pytest.raises(Refused) as refused:
            attacher.send(b"after detach\r")
        assert refused.value.code == "bad_request"
    finally:
        attacher.close()
    assert "echo: typed live" in daemon.call("peek", id=job_id)["text"]
    assert row(daemon, job_id)["state"] in ("working", "blocked")   # still running


def test_attach_passes_the_window_size_to_the_job(daemon):
    job_id = dispatch(daemon, "winsize.py")
    wait_for(lambda: "size 40x120" in daemon.call("peek", id=job_id)["text"], what="the first size")
    attacher = Attacher(daemon, job_id, rows=33, cols=91)
    try:
        wait_for(lambda: "size 33x91" in daemon.call("peek", id=job_id)["text"], what="the attacher's size")
        attacher.client.call("attach-resize", {"id": job_id, "rows": 25, "cols": 70})
        attacher.pump_until(lambda: b"size 25x70" in attacher.output, what="the resize")
    finally:
        attacher.close()


@pytest.fixture
def two_attachers(daemon):
    """A prompt_echo job and two attachers that have had its repaint."""
    job_id = dispatch(daemon, "prompt_echo.py", "0.1")
    wait_waiting(daemon, job_id)
    first, second = Attacher(daemon, job_id), Attacher(daemon, job_id)
    try:
        first.pump_until(lambda: b">" in first.output)
        second.pump_until(lambda: b">" in second.output)
        yield job_id, first, second
    finally:
        first.close()
        second.close()


def test_two_attachers_and_the_end_of_the_job(two_attachers):
    job_id, first, second = two_attachers
    first.send(b"quit\r")
    for attacher in (first, second):
        attacher.pump_until(lambda: attacher.detached is not None, what="the detached event")
        assert attacher.detached == "the job ended"
        assert b"bye" in attacher.output


def test_only_the_first_attachers_terminal_answers_the_jobs_queries(two_attachers):
    job_id, first, second = two_attachers
    # Both terminals answer a query: the second's answers are taken out, its keys
    # (an arrow key here) are not.
    report = b"\x1b[5;1R\x1b[?62;22c\x1b]11;rgb:0000/0000/0000\x1b\\"
    second.send(b"from" + report + b"\x1b[Dsecond\r")
    first.pump_until(lambda: b"echo: from\x1b[Dsecond" in first.output, what="the second's line")
    first.send(b"from" + report + b"first\r")
    first.pump_until(lambda: b"echo: from" + report + b"first" in first.output, what="the first's line")
    first.client.call("detach", {"id": job_id})
    # The first gone, the second's terminal answers from now on.
    second.send(b"now" + report + b"second\r")
    second.pump_until(lambda: b"echo: now" + report + b"second" in second.output, what="the answers kept")


def test_a_closed_connection_detaches_and_the_job_goes_on(daemon):
    job_id = dispatch(daemon, "prompt_echo.py", "0.1")
    wait_waiting(daemon, job_id)
    attacher = Attacher(daemon, job_id)
    attacher.pump_until(lambda: b">" in attacher.output)
    attacher.close()
    daemon.call("reply", id=job_id, text="still here")
    wait_for(lambda: "echo: still here" in daemon.call("peek", id=job_id)["text"])
    assert daemon.call("ping")


def test_attach_refusals(daemon):
    with pytest.raises(Refused) as refused:
        daemon.call("attach", id="nope")
    assert refused.value.code == "not_found"
    job_id = dispatch(daemon, "prompt_echo.py", "0.1")
    wait_waiting(daemon, job_id)
    with pytest.raises(Refused) as refused:
        daemon.call("attach", id=job_id, rows=10)
    assert refused.value.code == "bad_request"
    with pytest.raises(Refused) as refused:
        daemon.call("attach-input", id=job_id, data=encoded(b"x"))
    assert refused.value.code == "bad_request"                  # not attached here
    daemon.call("reply", id=job_id, text="quit")
    wait_for(lambda: row(daemon, job_id)["state"] == "done", what="the job to end")
    with pytest.raises(Refused) as refused:
        daemon.call("attach", id=job_id)
    assert refused.value.code == "unsupported"


def test_attach_to_a_reaped_job_starts_it_again_with_the_configured_key(daemon):
    with open(os.path.join(daemon.home, "roost.json"), "w") as handle:
        json.dump({"reapIdleAfterMs": 300, "attach": {"detachKey": "^]"}}, handle)
    job_id = dispatch(daemon, "prompt_echo.py", "0.1")
    wait_for(lambda: row(daemon, job_id)["reaped"], timeout=20, what="the job to be reaped")
    first_pid = row(daemon, job_id)["pid"]
    attacher = Attacher(daemon, job_id)
    try:
        assert attacher.result["detachKey"] == "^]"
        attacher.pump_until(lambda: b">" in attacher.output, what="the restarted job's prompt")
        again = row(daemon, job_id)
        assert again["state"] in ("working", "blocked") and again["pid"] != first_pid
    finally:
        attacher.close()


# -- the CLI through a pty ---------------------------------------------------------------

class Screenful:
    """What the CLI wrote to its terminal, read from the pty's master as it comes."""

    def __init__(self, master):
        self.master = master
        self.data = b""

    def until(self, needle, timeout=15):
        deadline = time.monotonic() + timeout
        while needle not in self.data:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"timed out waiting for {needle!r}; got {self.data[-600:]!r}")
            ready, _, _ = select.select([self.master], [], [], remaining)
            if ready:
                try:
                    chunk = os.read(self.master, 65536)
                except OSError:
                    chunk = b""
                if not chunk:
                    raise AssertionError(f"the pty closed before {needle!r}; got {self.data[-600:]!r}")
                self.data += chunk
        return self.data


def run_attach(daemon, job_id, *extra, rows=30, cols=100):
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    process = subprocess.Popen([PYTHON, "-m", "roost", "attach", job_id, *extra], stdin=slave,
                               stdout=slave, stderr=slave, env=daemon.env, start_new_session=True)
    return process, master, slave


def test_roost_attach_in_a_terminal_shows_types_and_detaches(daemon):
    job_id = dispatch(daemon, "prompt_echo.py", "0.1")
    wait_waiting(daemon, job_id)
    process, master, slave = run_attach(daemon, job_id)
    cooked = termios.tcgetattr(slave)
    screen = Screenful(master)
    try:
        screen.until(b"detach with Ctrl-q")
        screen.until(b"detach: Ctrl-q")                        # the hint drawn after the repaint
        assert b"\x1b[?1049h" in screen.data                    # its own alternate screen
        os.write(master, b"hello from a person\r")
        screen.until(b"echo: hello from a person")
        os.write(master, b"\x11")                               # Ctrl-q
        screen.until(b"detached from agent")
        assert process.wait(10) == 0
        assert b"\x1b[?1049l" in screen.data                    # the person's screen back
        assert termios.tcgetattr(slave) == cooked               # raw mode undone
    finally:
        if process.poll() is None:
            process.kill()
        os.close(master)
        os.close(slave)
    assert row(daemon, job_id)["state"] in ("working", "blocked")
    assert "echo: hello from a person" in daemon.call("peek", id=job_id)["text"]


def test_roost_attach_with_its_own_detach_key_and_a_window_change(daemon):
    job_id = dispatch(daemon, "winsize.py")
    wait_for(lambda: "size 40x120" in daemon.call("peek", id=job_id)["text"])
    process, master, slave = run_attach(daemon, job_id, "--detach-key=C-b", rows=28, cols=90)
    screen = Screenful(master)
    try:
        screen.until(b"detach with Ctrl-b")
        wait_for(lambda: "size 28x90" in daemon.call("peek", id=job_id)["text"])
        # The CLI has no controlling terminal here: the test sends SIGWINCH itself, as
        # the kernel would.
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 26, 80, 0, 0))
        os.kill(process.pid, signal.SIGWINCH)
        screen.until(b"size 26x80")
        os.write(master, b"\x11")                               # Ctrl-q is a key like any other now
        os.write(master, b"\x02")                               # Ctrl-b detaches
        assert process.wait(10) == 0
    finally:
        if process.poll() is None:
            process.kill()
        os.close(master)
        os.close(slave)


def test_roost_attach_refusals(daemon):
    process, master, slave = run_attach(daemon, "nope")
    try:
        output = Screenful(master).until(b"not_found")
        assert process.wait(10) == 1
        assert b"\x1b[?1049h" not in output                     # the terminal was left alone
    finally:
        os.close(master)
        os.close(slave)
    bad_key = daemon.cli("attach", "x", "--detach-key=ctrl-~~")
    assert bad_key.returncode == 2 and b"not a key roost understands" in bad_key.stderr
    no_terminal = daemon.cli("attach", "x")
    assert no_terminal.returncode == 2 and b"not a terminal" in no_terminal.stderr


@pytest.mark.parametrize("data, kept", [
    (b"a\x1b[12;40Rb", b"ab"),                               # cursor position
    (b"\x1b[>1;4000;0c\x1b[0n", b""),                         # device attributes, status
    (b"\x1b]10;rgb:ffff/ffff/ffff\x07x", b"x"),               # a colour, BEL-ended
    (b"\x1bP>|xterm(390)\x1b\\", b""),                        # XTVERSION
    (b"\x1b[A\x1b[1;5C\x1b[15~\x1b[<0;3;4M\x1b", b"\x1b[A\x1b[1;5C\x1b[15~\x1b[<0;3;4M\x1b"),   # keys, mouse, Esc
    (b"\x1b[200~pasted \x1b[1;1R\x1b[201~", b"\x1b[200~pasted \x1b[1;1R\x1b[201~"),             # a paste is the user's
])
def test_what_is_taken_out_of_a_second_attachers_input(data, kept):
    from roost.term.attachers import without_reports

    assert without_reports(data) == kept
