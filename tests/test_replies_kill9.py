"""Replies across kill -9 of the daemon (issue 15): what waits on a terminal job's book
is typed by the next daemon without a new reply; a reply typed but not submitted when
the daemon died is submitted, not typed twice; and a short run of the kill -9 battery
(bench/kill_replies.py, whose long run is `scripts/kill-replies`) holds."""

import json
import os
import sys

from conftest import DaemonProcess, ROOT, wait_for
from jobkit import RUN_DAEMON, agent, dispatch, wait_row

sys.path.insert(0, os.path.join(ROOT, "bench"))
import kill_replies  # noqa: E402

TERM = kill_replies.TERM


class DiesBeforeSubmitDaemon(DaemonProcess):
    """A real daemon that kills itself, once `die-now` is in its home, after typing a
    reply's text and before its submit keys."""

    code = ("import os, signal, sys\n"
            "from roost.term import typist\n"
            "write = typist.write_all\n"
            "def write_or_die(keyboard, data):\n"
            "    if data == keyboard.submit.encode() and \\\n"
            "            os.path.exists(os.path.join(os.environ['ROOST_HOME'], 'die-now')):\n"
            "        os.kill(os.getpid(), signal.SIGKILL)\n"
            "    return write(keyboard, data)\n"
            "typist.write_all = write_or_die\n" + RUN_DAEMON)


class DiesBeforeTakingOffDaemon(DaemonProcess):
    """A real daemon that kills itself, once `die-now` is in its home, after a reply was
    typed and submitted and before it is taken off the book."""

    code = ("import os, signal, sys\n"
            "from roost.jobs import reply_book\n"
            "ack = reply_book.ReplyBook.ack\n"
            "def ack_or_die(self, seq, exact=False, sent=None):\n"
            "    if os.path.exists(os.path.join(os.environ['ROOST_HOME'], 'die-now')):\n"
            "        os.kill(os.getpid(), signal.SIGKILL)\n"
            "    return ack(self, seq, exact, sent)\n"
            "reply_book.ReplyBook.ack = ack_or_die\n" + RUN_DAEMON)


def typed_lines(path):
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


def waiting(current):
    return current["status"] == "waiting"


def test_replies_queued_before_a_kill_9_are_typed_by_the_next_daemon_unasked(daemon, tmp_path):
    lines = str(tmp_path / "lines.jsonl")
    job_id = dispatch(daemon, agent("counts_lines.py", lines, 1.5), term=TERM)
    wait_row(daemon, job_id, waiting, what="the prompt")
    assert daemon.call("reply", id=job_id, text="first")["delivered"] is True
    for text in ("second", "third"):
        assert daemon.call("reply", id=job_id, text=text) == {"delivered": False, "saved": True}
    daemon.kill9()
    daemon.start()
    got = wait_for(lambda: len(typed_lines(lines)) >= 3 and typed_lines(lines), timeout=30,
                   what="the queued replies typed after the restart")
    assert [entry["line"] for entry in got] == ["first", "second", "third"]
    assert not any(entry["early"] for entry in got)


def test_a_reply_typed_but_not_submitted_by_a_killed_daemon_is_submitted_once_by_the_next(home, tmp_path):
    lines = str(tmp_path / "lines.jsonl")
    dying = DiesBeforeSubmitDaemon(home).start()
    job_id = dispatch(dying, agent("counts_lines.py", lines, 1.5), term=TERM)
    wait_row(dying, job_id, waiting, what="the prompt")
    assert dying.call("reply", id=job_id, text="first")["delivered"] is True
    open(os.path.join(home, "die-now"), "w").close()
    assert dying.call("reply", id=job_id, text="second one") == {"delivered": False, "saved": True}
    dying.process.wait(30)                       # it typed `second one`, and died before Enter
    os.unlink(os.path.join(home, "die-now"))
    daemon = DaemonProcess(home).start()
    try:
        got = wait_for(lambda: len(typed_lines(lines)) >= 2 and typed_lines(lines), timeout=30,
                       what="the half-typed reply submitted")
        assert [entry["line"] for entry in got] == ["first", "second one"]
        wait_row(daemon, job_id, lambda current: current["queued"] == 0 and waiting(current),
                 what="the book empty and the prompt back")
        assert len(typed_lines(lines)) == 2
    finally:
        daemon.stop()


def test_a_reply_submitted_by_a_killed_daemon_is_not_typed_again_by_the_next(home, tmp_path):
    lines = str(tmp_path / "lines.jsonl")
    dying = DiesBeforeTakingOffDaemon(home).start()
    job_id = dispatch(dying, agent("counts_lines.py", lines, 1.5), term=TERM)
    wait_row(dying, job_id, waiting, what="the prompt")
    assert dying.call("reply", id=job_id, text="first")["delivered"] is True
    assert dying.call("reply", id=job_id, text="second one") == {"delivered": False, "saved": True}
    open(os.path.join(home, "die-now"), "w").close()
    dying.process.wait(30)                 # `second one` submitted, and still on the book
    os.unlink(os.path.join(home, "die-now"))
    daemon = DaemonProcess(home).start()
    try:
        wait_row(daemon, job_id, lambda current: current["queued"] == 0 and waiting(current),
                 what="the book empty and the prompt back")
        assert daemon.call("reply", id=job_id, text="third")["delivered"] is True
        got = wait_for(lambda: len(typed_lines(lines)) >= 3 and typed_lines(lines), timeout=30,
                       what="the third reply")
        assert [entry["line"] for entry in got] == ["first", "second one", "third"]
    finally:
        daemon.stop()


def test_a_short_kill_9_battery_loses_no_reply_and_hands_none_over_twice():
    figures = kill_replies.battery(kills=8, agents=3, clients=6, seed=15)
    assert kill_replies.held(figures), figures
    assert figures["replies"] > 0 and figures["resent"] > 0, figures
