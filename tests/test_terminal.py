"""A job's Terminal driven under gevent with real child processes on real ptys.

The test body runs in this process's gevent hub without monkey patching: the daemon
patches with os=False, so the Terminal's own calls (os.read/os.write on a non-blocking
fd, waits on the hub's fd watchers) are the same here as there. One test runs a
Terminal in a subprocess under the daemon's real patching as well.
"""

import fcntl
import gc
import json
import os
import shutil
import struct
import subprocess
import termios

import gevent
import pytest

from conftest import AGENTS, PYTHON, ROOT
from roost.term.pty_reader import PtyReader
from termkit import Job, gwait


@pytest.fixture
def jobs():
    made = []

    def make(*args, **kwargs):
        job = Job(*args, **kwargs)
        made.append(job)
        return job

    yield make
    for job in made:
        job.close()
    for job in made:
        shutil.rmtree(job.dir, ignore_errors=True)


def agent(name, *args):
    return [PYTHON, os.path.join(AGENTS, name), *args]


class Sink:
    """An attacher; `takes`: how many writes it takes before it falls behind."""

    def __init__(self, takes=None):
        self.data = b""
        self.ended = None
        self.takes = takes

    def write_output(self, data):
        if self.takes is not None:
            if self.takes == 0:
                return False
            self.takes -= 1
        self.data += data
        return True

    def end(self, why):
        self.ended = why


def test_working_then_waiting_then_working_after_a_reply(jobs):
    job = jobs(agent("prompt_echo.py", "0.1"), term={"settleMs": 300})
    first = job.wait_status("waiting")
    assert first["state"] == "blocked" and first["waitingFor"] == "first-prompt"
    assert first["summary"] == ">"
    before = len(job.changes)
    result = job.terminal.type_text("hello there")
    assert result == {"submitted": True, "error": None}
    gwait(lambda: ("working", "busy", None) in job.states()[before:], what="working after the reply")
    after = job.wait_status("waiting")
    assert after["waitingFor"] == "question"
    assert "echo: hello there" in job.terminal.text()
    states = job.states()
    expected = [("working", "busy", None), ("blocked", "waiting", "first-prompt"),
                ("working", "busy", None), ("blocked", "waiting", "question")]
    positions = [states.index(expected[0])]
    for state in expected[1:]:
        positions.append(states.index(state, positions[-1] + 1))
    assert positions == sorted(positions)
    # on_change is told of changes only: no two readings in a row are the same.
    assert all(a != b for a, b in zip(job.changes, job.changes[1:]))
    assert b"echo: hello there" in job.log_bytes()


# The work phase is quiet: a profile's `working` pattern says it is work, not a wait.
WORKING = r"working\.\.\.\s*\Z"


def test_follow_up_waits_until_the_agent_waits(jobs):
    job = jobs(agent("prompt_echo.py", "1.0"), term={"settleMs": 200, "working": WORKING})
    job.wait_status("waiting")
    assert job.terminal.type_text("first")["submitted"]
    # While it works, a follow-up waits; typed at once it would show on its screen now.
    typed = gevent.spawn(job.terminal.type_text, "second")
    gwait(lambda: job.terminal.text().endswith("working...") and job.terminal.judged,
          what="the quiet work phase to be judged")
    assert job.terminal.reading["state"] == "working"
    assert "second" not in job.terminal.text()
    assert typed.get(timeout=10) == {"submitted": True, "error": None}
    gwait(lambda: "echo: second" in job.terminal.text(), what="the second echo")
    text = job.terminal.text()
    assert text.index("echo: first") < text.index("> second")


def test_follow_up_gives_up_after_its_timeout(jobs):
    job = jobs(agent("prompt_echo.py", "5"), term={"settleMs": 200, "working": WORKING})
    job.wait_status("waiting")
    job.terminal.type_text("slow one")
    gwait(lambda: job.terminal.reading["state"] == "working", what="working")
    result = job.terminal.type_text("too early", timeout=0.3)
    assert result["submitted"] is False and "still working" in result["error"]


def test_a_reply_the_agent_never_reads_is_not_submitted(jobs):
    job = jobs(agent("ignores_input.py"), term={"settleMs": 150})
    gwait(lambda: job.terminal.judged and "ready" in job.terminal.text(), what="its prompt")
    job.terminal.verify_timeout = 0.8
    result = job.terminal.type_text("are you there", mode="steer")
    assert result["submitted"] is False
    assert "stayed on the input line" in result["error"]


def test_a_child_that_never_reads_stalls_only_its_own_job(jobs):
    stuck = jobs(agent("ignores_input.py"), term={"settleMs": 100})
    gwait(lambda: stuck.terminal.judged and "ready" in stuck.terminal.text(), what="its prompt")
    ticks = []
    ticker = gevent.spawn(lambda: [ticks.append(gevent.sleep(0.01)) for _ in range(1000)])
    # Far more than the pty's input buffer: the writer has to wait for room forever.
    assert stuck.terminal.write_input(b"x" * 200_000)
    started = len(ticks)
    gwait(lambda: len(ticks) > started + 20, timeout=5, what="the loop to keep turning")
    stuck.terminal.write_timeout = 0.3
    result = stuck.terminal.type_text("hello", mode="steer")
    assert result == {"submitted": False, "error": "the job is not reading its input"}
    ticker.kill()


def test_a_question_with_choices_is_read_with_the_profile(jobs):
    term = {"settleMs": 150, "waiting": r"Choose \[\d-\d\]:\s*\Z", "working": r"planning.*\s*\Z"}
    job = jobs(agent("asks_question.py"), term=term)
    reading = job.wait_status("waiting")
    kernel = reading["why"].pop("kernel")
    assert reading == {"state": "blocked", "status": "waiting", "waitingFor": "first-prompt",
                       "summary": "Choose [1-3]:",
                       "why": {"rule": "waiting", "pattern": term["waiting"], "line": "Choose [1-3]:",
                               "typed": False}}
    # The kernel's word beside the screen's (issue 27): the agent reads its terminal.
    assert kernel["verdict"] == "reads" and kernel["seen"][0]["does"] == "reads-terminal"
    # The quiet planning phase (longer than settleMs) was read as work, never as a wait.
    assert ("working", "busy", None) in job.states()
    assert all(state[1] in ("busy", "waiting") for state in job.states())
    assert "  2) sqlite" in job.terminal.text()
    assert job.terminal.type_text("2")["submitted"]
    gwait(lambda: "using sqlite" in job.terminal.text(), what="the answer to be taken")
    reading = job.wait_status("waiting")
    assert reading["waitingFor"] == "question" and reading["summary"] == "Choose [1-3]:"


def test_a_screen_neither_pattern_matches_is_reported_as_unknown(jobs):
    term = {"settleMs": 150, "waiting": r"NEVER SHOWN", "working": r"NOR THIS"}
    job = jobs(agent("asks_question.py"), term=term)
    unknown = {"state": "blocked", "status": None, "waitingFor": None, "summary": "Choose [1-3]:",
               "why": {"rule": "none", "typed": False}}
    gwait(lambda: job.terminal.reading == unknown, what="the screen to settle")
    assert all(change["status"] != "waiting" for change in job.changes)


def test_a_working_pattern_keeps_a_quiet_screen_working(jobs):
    job = jobs(agent("prompt_echo.py", "2"), term={"settleMs": 150, "working": WORKING})
    job.wait_status("waiting")
    job.terminal.type_text("go")
    # Quiet for longer than settleMs, yet the screen says it works.
    gwait(lambda: job.terminal.text().endswith("working...") and job.terminal.judged,
          what="the quiet work phase to be judged")
    assert job.terminal.reading == {"state": "working", "status": "busy", "waitingFor": None,
                                    "summary": "working...",
                                    "why": {"rule": "working", "pattern": WORKING, "line": "working...",
                                            "typed": True}}


def test_terminal_queries_are_answered_while_nobody_is_attached(jobs):
    job = jobs(agent("query_terminal.py"), term={"settleMs": 150}, rows=30, cols=100)
    job.wait_status("waiting")
    assert "cursor at row 1 col 1" in job.terminal.text()
    assert job.terminal.type_text("hi")["submitted"]
    gwait(lambda: "echo: hi" in job.terminal.text())


def test_with_an_attacher_its_terminal_answers_queries_not_roost(jobs):
    # Attach before the program queries: a wrapper holds it until a first line comes.
    job = jobs([PYTHON, "-c", "import sys,time; sys.stdin.readline(); "
                f"exec(open({os.path.join(AGENTS, 'query_terminal.py')!r}).read())"],
               term={"settleMs": 150})
    sink = Sink()
    job.terminal.attach(sink)
    job.terminal.write_input(b"start\r")
    gwait(lambda: b"\x1b[6n" in sink.data, what="the query to reach the attacher")
    gwait(lambda: job.terminal.judged, what="quiet after the query")
    assert "cursor at" not in job.terminal.text()      # roost did not answer it
    job.terminal.write_input(b"\x1b[7;9R")             # the attacher's terminal does
    # The program takes the first answer it reads: this one, so roost sent none.
    gwait(lambda: "cursor at row 7 col 9" in job.terminal.text())


def test_alternate_screen_agent_renders_and_the_main_screen_comes_back(jobs):
    job = jobs(agent("alt_screen.py"), term={"settleMs": 150})
    gwait(lambda: "FULL SCREEN UI" in job.terminal.text(), what="the full-screen UI")
    assert "before the full-screen part" not in job.terminal.text()
    sink = Sink()
    job.terminal.attach(sink)
    assert b"FULL SCREEN UI" in sink.data                # the repaint on join
    job.terminal.write_input(b"k")
    gwait(lambda: "back on the main screen" in job.terminal.text(), what="the main screen")
    text = job.terminal.text()
    assert text.startswith("before the full-screen part")
    assert "FULL SCREEN" not in text
    # The attacher never sees the job's own screen switches, and gets a repaint after.
    gwait(lambda: sink.data.count(b"before the full-screen part") >= 1)
    assert b"\x1b[?1049" not in sink.data


def test_attachers_get_a_repaint_then_live_output_and_leave_at_the_end(jobs):
    job = jobs(agent("prompt_echo.py", "0.1"), term={"settleMs": 150})
    job.wait_status("waiting")
    first, second, slow = Sink(), Sink(), Sink(takes=1)
    for sink in (first, second, slow):
        job.terminal.attach(sink)
    assert first.data.startswith(b"\x1b[0m") and b">" in first.data
    assert job.terminal.attached == 3
    job.terminal.write_input(b"abc\r")
    gwait(lambda: b"echo: abc" in first.data and b"echo: abc" in second.data)
    # The one that stopped taking output was let go; the others never waited for it.
    assert slow.ended == "the attacher fell behind" and job.terminal.attached == 2
    job.terminal.detach(second)
    job.terminal.write_input(b"quit\r")
    gwait(lambda: job.terminal.eof.is_set(), what="the end of the job")
    assert b"bye" in first.data and b"bye" not in second.data
    assert first.ended == "the job ended" and second.ended is None
    assert job.eofs == [1]


@pytest.mark.parametrize("carried", [True, False], ids=["carried", "read-and-written"])
def test_a_flood_is_logged_whole_and_the_screen_shows_its_end(jobs, carried):
    size = 3 * 1024 * 1024
    code = ("import os,sys\n"
            f"n = {size} // 64\n"
            "out = b''.join(b'%09d ' % i + b'y' * 53 + b'\\n' for i in range(n))\n"
            "view = memoryview(out)\n"
            "while view:\n    view = view[os.write(1, view):]\n"
            "os.write(1, b'DONE\\n')\n")
    job = jobs([PYTHON, "-c", code], term={"settleMs": 100}, log_limit=2 * 1024 * 1024, carried=carried)
    gwait(lambda: job.terminal.eof.is_set(), timeout=60, what="the flood to end")
    n = size // 64
    expected = b"".join(b"%09d " % i + b"y" * 53 + b"\r\n" for i in range(n)) + b"DONE\r\n"
    logged = job.log_bytes()
    # 2 MiB limit: the newest bytes are all there, without a gap, up to the very end.
    assert len(logged) >= 1024 * 1024
    assert expected.endswith(logged)
    assert job.terminal.text(last=2) == "%09d " % (n - 1) + "y" * 53 + "\nDONE"
    # Parts rotated out are removed off the loop, not left behind.
    gwait(lambda: sorted(os.listdir(job.dir)) == ["output.log", "output.log.1"],
          what="the rotated-out parts to be removed")


def test_several_floods_at_once_are_each_logged_whole(jobs):
    # They share the screens' feeding budget and are read a buffer a turn.
    size = 512 * 1024
    code = ("import os,sys\n"
            f"tag = sys.argv[1].encode(); n = {size} // 32\n"
            "out = b''.join(tag + b' %09d ' % i + b'z' * 19 + b'\\n' for i in range(n))\n"
            "view = memoryview(out)\n"
            "while view:\n    view = view[os.write(1, view):]\n"
            "os.write(1, tag + b' DONE\\n')\n")
    floods = [jobs([PYTHON, "-c", code, "j%d" % number], term={"settleMs": 100}) for number in range(4)]
    for number, job in enumerate(floods):
        gwait(lambda: job.terminal.eof.is_set(), timeout=60, what="the floods to end")
        tag = b"j%d" % number
        expected = b"".join(tag + b" %09d " % i + b"z" * 19 + b"\r\n" for i in range(size // 32))
        assert job.log_bytes() == expected + tag + b" DONE\r\n"
        assert job.terminal.text(last=1) == "j%d DONE" % number


def test_idle_terminals_hold_no_greenlet_and_wake_on_output(jobs):
    def readers():
        return [item for item in gc.get_objects() if isinstance(item, gevent.Greenlet)
                and not item.dead and isinstance(getattr(item._run, "__self__", None), PtyReader)]

    idle = [jobs(agent("prompt_echo.py", "0.1"), term={"settleMs": 100}) for _ in range(8)]
    for job in idle:
        job.wait_status("waiting")
    gwait(lambda: not readers(), what="the readers to let their greenlets go")
    assert all(job.terminal.screen.frozen for job in idle)
    woken = idle[3]
    assert woken.terminal.type_text("wake up")["submitted"]
    gwait(lambda: "echo: wake up" in woken.terminal.text())
    assert woken.wait_status("waiting")["waitingFor"] == "question"
    gwait(lambda: not readers() and woken.terminal.screen.frozen, what="quiet again")
    assert all(job.terminal.reading["status"] == "waiting" for job in idle)


def test_resize_reaches_the_pty_and_the_screen(jobs):
    job = jobs(agent("prompt_echo.py"), term={"settleMs": 100})
    job.wait_status("waiting")
    job.terminal.resize(33, 101)
    rows, cols, _, _ = struct.unpack("HHHH", fcntl.ioctl(job.terminal.fd, termios.TIOCGWINSZ, b"\0" * 8))
    assert (rows, cols) == (33, 101)
    assert (job.terminal.screen.rows, job.terminal.screen.cols) == (33, 101)


def test_a_new_terminal_starts_from_the_log_of_the_one_before(jobs):
    job = jobs(agent("prompt_echo.py", "0.1"), term={"settleMs": 100})
    job.wait_status("waiting")
    job.terminal.type_text("remember me")
    gwait(lambda: "echo: remember me" in job.terminal.text())
    # Another program under a Terminal over the same directory (a daemon taking over).
    later = jobs([PYTHON, "-c", "input()"], term={"settleMs": 100}, job_dir=job.dir, typed=True)
    gwait(lambda: "echo: remember me" in later.terminal.text(), what="the replayed screen")
    reading = later.wait_status("waiting")
    assert reading["waitingFor"] == "question"


ASKS_WHERE_THE_CURSOR_IS = (
    "import os, sys, termios, tty\n"
    "tty.setraw(0, termios.TCSANOW)\n"   # what came before (an answer) stays to be read
    "os.write(1, b'\\x1b[3;3H\\x1b[6n')\n"
    "answer = b''\n"
    "while not answer.endswith(b'R'):\n"
    "    answer += os.read(0, 1)\n"
    "os.write(1, b'\\r\\ngot ' + answer[1:] + b' end\\r\\n')\n"
    "import time; time.sleep(30)\n")


def test_a_query_in_the_replayed_log_is_not_answered_again(jobs):
    job = jobs([PYTHON, "-c", "import sys; sys.stdout.write('\\x1b[10;10H\\x1b[6n'); sys.stdout.flush()"],
               term={"settleMs": 100})
    gwait(lambda: b"\x1b[6n" in job.log_bytes(), what="the first program's query in the log")
    job.terminal.eof.wait(10)
    # The next program asks at row 3; an answer to the replayed query (row 10) would
    # reach it first.
    later = jobs([PYTHON, "-c", ASKS_WHERE_THE_CURSOR_IS], term={"settleMs": 100}, job_dir=job.dir, typed=True)
    gwait(lambda: "got [3;3R end" in later.terminal.text(), what="the later program's own answer")


def test_close_stops_the_pump_and_the_fd(jobs):
    job = jobs(agent("prompt_echo.py"), term={"settleMs": 100})
    job.wait_status("waiting")
    fd = job.terminal.fd
    job.terminal.close()
    assert job.terminal.closed
    with pytest.raises(OSError):
        os.fstat(fd)
    assert job.terminal.type_text("late", mode="steer")["submitted"] is False


PATCHED_SCRIPT = r"""
import json, os, pty, shutil, subprocess, sys, tempfile, time
sys.path.insert(0, sys.argv[1])
from roost.daemon import patching
patching.patch()
import gevent
from roost.term.pty_reader import PtyReader
from roost.term.terminal import Terminal
from roost.unix.terminal_waits import Prober
master, slave = pty.openpty()
process = subprocess.Popen([sys.executable, sys.argv[2], "0.2"], stdin=slave, stdout=slave,
                           stderr=slave, start_new_session=True)
os.close(slave)
changes = []
job_dir = tempfile.mkdtemp()
prober = Prober()
terminal = Terminal("p", master, job_dir, term={"settleMs": 150}, on_change=changes.append,
                    probe=lambda: prober.probe_master(process.pid, master)).start()
deadline = time.monotonic() + 10
while terminal.reading["status"] != "waiting" and time.monotonic() < deadline:
    gevent.sleep(0.01)
typed = terminal.type_text("patched")
while "echo: patched" not in terminal.text() and time.monotonic() < deadline:
    gevent.sleep(0.01)
print(json.dumps({"typed": typed, "text": terminal.text(), "states": [c["status"] for c in changes]}))
process.kill()
process.wait()
terminal.close()
shutil.rmtree(job_dir)
"""


def test_under_the_daemons_real_patching():
    result = subprocess.run([PYTHON, "-c", PATCHED_SCRIPT, ROOT, os.path.join(AGENTS, "prompt_echo.py")],
                            capture_output=True, timeout=60)
    assert result.returncode == 0, result.stderr.decode()
    outcome = json.loads(result.stdout)
    assert outcome["typed"] == {"submitted": True, "error": None}
    assert "echo: patched" in outcome["text"]
    assert "waiting" in outcome["states"] and "busy" in outcome["states"]


def test_a_screen_that_redraws_the_same_text_while_it_waits_settles_and_waits(jobs):
    # Its prompt is drawn again every 0.1 s and its title changes: output never stops
    # for the settle time, what it shows does.
    for term in ({"settleMs": 300}, {"settleMs": 300, "working": r"^working$", "waiting": r"^> ?$"}):
        job = jobs(agent("idle_redraw.py"), term=term)
        job.wait_status("waiting")
        changes = len(job.changes)
        gwait(lambda: job.log_bytes().count(b"\x1b]0;") > 20, what="twenty more redraws")
        assert len(job.changes) == changes and job.terminal.reading["status"] == "waiting"


def test_a_line_whose_text_changes_is_work_only_with_a_working_pattern(jobs):
    # A plain program's changing screen says nothing by itself (issue 27): it reads its
    # terminal, and so it waits, clock or no clock.
    job = jobs(agent("idle_redraw.py", "words"), term={"settleMs": 300})
    gwait(lambda: job.terminal.reading["status"] == "waiting", what="the kernel's word")
    changes = len(job.changes)
    gwait(lambda: "tick 25" in job.terminal.text(), what="the clock")
    assert len(job.changes) == changes and job.terminal.reading["status"] == "waiting"
    # A profile that knows no working pattern takes a changing screen for work.
    job = jobs(agent("idle_redraw.py", "words"), term={"settleMs": 300, "waiting": r"^> ?$"})
    gwait(lambda: "tick 5" in job.terminal.text(), what="the clock")
    assert job.terminal.reading["state"] == "working"


def test_a_flood_of_positioned_updates_is_not_skipped_over(jobs):
    # Skipping ahead suits a stream of lines; a TUI redrawing in place would keep rows
    # of a screen that is long gone.
    job = jobs(agent("tui_flood.py"), term={"settleMs": 200}, cols=120)
    gwait(lambda: "flood done" in job.terminal.text(), timeout=20, what="the flood fed")
    lines = job.terminal.text().splitlines()
    assert lines[0] == "" and lines[1].startswith("line 2 step 299")
