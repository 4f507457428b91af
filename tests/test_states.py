"""Honest states for any program (issue 27): a plain job's row from the kernel's word
(roost.unix.terminal_waits, read by the keeper), not from a quiet screen. A real daemon
and keeper, real programs on real ptys: a loop that prints and sleeps works, a program
that asks and reads waits until answered, a reader in a pipeline or under an interactive
shell is found, node's readline is unknown (waiting with a pattern), a pattern's waiting
screen the kernel contradicts is held; notifications, the feed and `explain` follow.
(tests/test_states_looks.py: the looks again, an older keeper, the rows downstream.)"""

import os
import re
import shutil
import subprocess
import time

import pytest

from conftest import PYTHON, tracebacks_in_log, wait_for
from jobkit import agent, dispatch, row, wait_row
from notifykit import Sinks
from statekit import NODE_QUESTION, explained, sh, started, state_events, waiting, working

def test_a_loop_stays_working_a_question_waits_until_answered_and_no_one_is_called_for_work(home):
    sinks = Sinks(os.path.dirname(home))
    daemon = started(home, sinks)
    try:
        loop = dispatch(daemon, sh("while true; do date; sleep 2; done"), name="dates")
        asks = dispatch(daemon, sh('printf "your name? "; read name; echo "hello $name"; sleep 300'), name="asks")
        sleeper = dispatch(daemon, sh("echo compiling; sleep 300"), name="sleeper")
        asked = wait_row(daemon, asks, waiting, what="the question on the row")
        assert asked["waitingFor"] == "question" and asked["question"] == "your name?"
        assert "reads its terminal (read on fd 0, /dev/pts/" in explained(daemon, asks)
        # 20 s of the loop's prints and pauses: its row works at every look, and the
        # feed has no state change for it (each of its screens is judged meanwhile).
        wait_for(lambda: "sleeps (clock_nanosleep)" in explained(daemon, loop), what="the loop judged")
        seen, answered = set(), False
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            rows = {item["id"]: item for item in daemon.call("list")["jobs"]}
            seen.add((rows[loop]["state"], rows[loop]["status"]))
            seen.add(("sleeper",) + (rows[sleeper]["state"], rows[sleeper]["status"]))
            if not answered and deadline - time.monotonic() < 12:
                assert waiting(rows[asks]), rows[asks]          # still asking, 8 s on
                assert daemon.call("reply", id=asks, text="ada")["delivered"]
                answered = True
            time.sleep(0.25)
        assert seen == {("working", "busy"), ("sleeper", "working", "busy")}
        assert "hello ada" in daemon.call("peek", id=asks)["text"]
        assert working(row(daemon, asks))     # it sleeps now: at work, not asking again
        assert "`sleep` sleeps (clock_nanosleep)" in explained(daemon, asks)
        assert state_events(daemon, loop) == [] and state_events(daemon, sleeper) == []
        assert state_events(daemon, asks) == ["waits for an answer: your name?", "working"]
        # Told once for the question; the loop and the sleeper called no one.
        notes = wait_for(sinks.notes, what="the question told")
        assert [(note["id"], note["kind"]) for note in notes] == [(asks, "question")]
        assert "your name?" in notes[0]["body"]
        entries = daemon.call("timeline", id=loop)["entries"]
        assert not [entry for entry in entries if entry["kind"] == "state" and entry["state"] != "working"]
    finally:
        daemon.stop()
    assert not tracebacks_in_log(home)


def test_a_reader_in_a_pipeline_and_a_child_of_an_interactive_shell_are_found(daemon, tmp_path):
    piped = dispatch(daemon, sh('(printf "pipe? "; read x; echo "got $x") | cat; sleep 300'), name="piped")
    assert wait_row(daemon, piped, waiting, what="the pipeline's reader")["question"] == "pipe?"
    said = explained(daemon, piped)
    assert re.search(r"pid \d+ `sh` reads its terminal \(read on fd 0, /dev/pts/\d+\)", said), said
    assert "`cat` reads a pipe" in said
    # An interactive shell: its prompt waits; the command typed at it runs as its
    # foreground child, which asks in turn; answered, the shell waits at its prompt again.
    env = {"PS1": "shell$ ", "HOME": str(tmp_path)}
    shell = dispatch(daemon, ["bash", "--norc", "--noprofile", "-i"], env=env, name="shell")
    wait_row(daemon, shell, lambda current: waiting(current) and current["question"] == "shell$",
             what="the shell's prompt")
    assert "`bash` reads its terminal (pselect6 on /dev/pts/" in explained(daemon, shell)
    command = f"{PYTHON} -c \"print('child says', input('child? '))\""
    assert daemon.call("reply", id=shell, text=command)["delivered"]
    wait_row(daemon, shell, lambda current: waiting(current) and current["question"] == "child?",
             what="the child's question")
    evidence = [entry for entry in daemon.call("timeline", id=shell)["entries"]
                if entry["kind"] == "state" and entry.get("question") == "child?"][-1]["why"]["kernel"]
    reader = evidence["seen"][0]
    assert reader["does"] == "reads-terminal" and reader["name"].startswith("python") and reader["fg"] is True
    assert evidence["by"] == "keeper"
    assert daemon.call("reply", id=shell, text="yes")["delivered"]
    wait_for(lambda: "child says yes" in daemon.call("peek", id=shell)["text"], what="the child's answer")
    wait_row(daemon, shell, lambda current: waiting(current) and current["question"] == "shell$",
             what="the prompt again")


def test_a_jailed_program_is_read_like_any_other(daemon):
    """In a bubblewrap jail the program makes itself (a /dev and a PID namespace of its own,
    a new session): its processes are found under the job's first one, its terminal by
    inode, not by path. Run without roost's own jail, in which every other test's program
    is read (a jail inside roost's is the user namespace's to refuse)."""
    bwrap = shutil.which("bwrap")
    if bwrap is None or subprocess.run([bwrap, "--ro-bind", "/", "/", "--unshare-pid", "true"],
                                       capture_output=True).returncode != 0:
        pytest.skip("bubblewrap cannot make namespaces here")
    jailed = dispatch(daemon, [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-pid",
                               "--new-session", "--die-with-parent",
                               "sh", "-c", 'printf "jailed? "; read x; echo "got $x"; sleep 300'], name="jailed",
                      sandbox=False)
    assert wait_row(daemon, jailed, waiting, what="the jailed read")["question"] == "jailed?"
    said = explained(daemon, jailed)
    assert re.search(r"`sh` reads its terminal \(read on fd 0, /dev/pts/\d+\)", said), said
    assert daemon.call("reply", id=jailed, text="yes")["delivered"]
    wait_for(lambda: working(row(daemon, jailed)) and "`sleep` sleeps" in explained(daemon, jailed),
             what="the jailed sleep")


def test_a_node_readline_prompt_is_unknown_and_with_a_pattern_waits(home):
    sinks = Sinks(os.path.dirname(home))
    daemon = started(home, sinks)
    try:
        plain = dispatch(daemon, ["node", "-e", NODE_QUESTION], name="node-plain")
        unknown = wait_row(daemon, plain, lambda current: current["state"] == "blocked", timeout=20,
                           what="node judged")
        assert unknown["status"] is None and unknown["waitingFor"] is None and unknown.get("unreadSince") is None
        said = explained(daemon, plain)
        assert re.search(r"`node` waits in epoll_\w+ on its terminal and \d+ other files?", said), said
        assert "cannot tell whether it waits" in said and "unknown (?)" in said
        # Nothing is typed into it, and no one is called for it.
        assert daemon.call("reply", id=plain, text="red") == {"delivered": False, "saved": True}
        patterned = dispatch(daemon, ["node", "-e", NODE_QUESTION], name="node-pattern",
                             term={"settleMs": 300, "waiting": r"^your colour\?"})
        asked = wait_row(daemon, patterned, waiting, timeout=20, what="the pattern's wait")
        assert asked["waitingFor"] == "first-prompt"
        said = explained(daemon, patterned)
        assert "the profile's waiting pattern" in said and "The kernel, asked beside it:" in said
        assert daemon.call("reply", id=patterned, text="blue")["delivered"]
        wait_for(lambda: "got blue" in daemon.call("peek", id=patterned)["text"], what="node's answer")
        notes = wait_for(sinks.notes, what="the pattern's wait told")
        time.sleep(1.5)      # past the notifier's settle time: a note for the unknown row would be out
        assert [note["id"] for note in sinks.notes()] == [patterned] and notes
        assert "blocked" not in [event["text"] for event in daemon.call("events", id=plain)["events"]]
    finally:
        daemon.stop()
    assert not tracebacks_in_log(home)


def test_a_waiting_screen_the_kernel_contradicts_is_held(daemon):
    # It shows a prompt its pattern matches, and never reads its terminal (it sleeps).
    job_id = dispatch(daemon, agent("ignores_input.py"), term={"settleMs": 200, "waiting": r"^>"})
    held = wait_for(lambda: [entry for entry in daemon.call("timeline", id=job_id)["entries"]
                             if entry["kind"] == "held"], what="the hold in the timeline")[0]
    assert held["state"] == "working" and held["why"]["screen"]["rule"] == "waiting"
    assert held["why"]["kernel"]["verdict"] == "busy" and ">" in held["screen"]
    assert working(row(daemon, job_id))
    said = explained(daemon, job_id)
    assert "but the kernel says" in said and "`python" in said and "holds the row as it was (working)" in said
    assert daemon.call("reply", id=job_id, text="not typed") == {"delivered": False, "saved": True}
    shown = subprocess.run([PYTHON, "-m", "roost", "timeline", job_id], env=daemon.env, capture_output=True,
                           text=True, timeout=30).stdout
    assert "held at working/busy/None: the screen read waiting" in shown
