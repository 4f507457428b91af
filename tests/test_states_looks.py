"""Honest states (issue 27), continued: a quiet job's processes looked at again (keys typed
with no echo bring the look forward), a first task waited for only by an agent that takes
one, a daemon whose keeper has no `probe` reads /proc itself, a reader without ptrace
rights says unknown, and the rows downstream (hub, notifier, list, feed, digests) key on
status waiting. Apart from tests/test_states.py so the two run on two workers at once."""

import json
import os
import subprocess

from conftest import PYTHON, DaemonProcess, tracebacks_in_log, wait_for
from jobkit import dispatch, row, stays, wait_row, write_config
from keeperkit import older_keeper
from roost.keeper import admission
from roost.unix import syscalls
from statekit import explained, sh, waiting, working


def test_a_quiet_job_is_looked_at_again_and_keys_typed_without_echo_are_seen(daemon):
    # It prints, sleeps, then reads with no prompt: its screen never changes again.
    late = dispatch(daemon, sh("echo compiling; sleep 2; read answer; sleep 300"), name="late")
    wait_row(daemon, late, working, what="it to work")
    assert wait_row(daemon, late, waiting, timeout=15, what="the silent read found")["question"] == "compiling"
    # A PIN read with echo off: once it is typed nothing on the screen changes; the keys
    # themselves make roost look again.
    pin = dispatch(daemon, sh('stty -echo; printf "pin? "; read pin; stty echo; sleep 300'), name="pin")
    wait_row(daemon, pin, waiting, what="the PIN asked")
    # Still asking 7 s on: roost's looks at it are 8 s apart by now.
    stays(lambda: waiting(row(daemon, pin)), 7, "the PIN's wait")
    screen = daemon.call("peek", id=pin)["text"]
    assert daemon.cli("keys", pin, "1", "2", "3", "4", "Enter").returncode == 0
    wait_row(daemon, pin, working, timeout=3, what="the PIN taken, seen soon")
    assert daemon.call("peek", id=pin)["text"] == screen


def test_only_an_agent_that_takes_a_task_waits_for_its_first(daemon, tmp_path):
    reads = [PYTHON, "-c", "import time; print('got', input('> ')); time.sleep(300)"]
    command = dispatch(daemon, reads, name="command")
    assert wait_row(daemon, command, waiting)["waitingFor"] == "question"
    write_config(daemon.home, {"agentProfiles": {"reader": {"command": reads, "task": "type"}}})
    agent_id = daemon.call("dispatch", kind="shell", cwd=str(tmp_path), command=[], env={}, name="agent",
                           sessionFile="", origin="dispatch", profile="reader")["id"]
    assert wait_row(daemon, agent_id, waiting)["waitingFor"] == "first-prompt"
    events = [event["text"] for event in daemon.call("events", limit=1000)["events"] if event["kind"] == "state"]
    assert "waits for its first task" in [text for text in events] and events.count("waits for its first task") == 1


def test_with_an_older_keeper_the_daemon_reads_the_kernel_itself(home):
    """A keeper of wire version 3 serves only its daemon but has no `probe` (as one left
    running across an upgrade): the daemon keeps it, and reads /proc itself."""
    os.makedirs(os.path.join(home, "jobs"), mode=0o700)
    older = older_keeper(home, admission.ensure_secret(home), version=3, without=("probe",))
    daemon = DaemonProcess(home).start()
    try:
        asks = dispatch(daemon, sh('printf "q? "; read answer; sleep 300'), name="asks")
        assert wait_row(daemon, asks, waiting)["question"] == "q?"
        assert "(read by the daemon)" in explained(daemon, asks)
        answer = daemon.call("reply", id=asks, text="a")
        assert answer["delivered"], (answer, row(daemon, asks), explained(daemon, asks))
        wait_for(lambda: "`sleep` sleeps" in explained(daemon, asks), what="the sleep, read by the daemon")
        assert older.poll() is None      # kept: it serves only the daemon
        checks = {check["check"]: check for check in daemon.call("doctor")["roost"]}
        assert "wire version 3" in checks["keeper"]["text"] and "reads /proc itself" in checks["keeper"]["text"]
    finally:
        daemon.stop()
        older.kill()
        older.wait()
    assert not tracebacks_in_log(home)


def test_without_ptrace_rights_the_evidence_is_unknown(tmp_path):
    """Where the reader may not read a process's calls (another user's, no ptrace
    rights: a daemon under Yama whose keeper is old), it says unknown, never a guess."""
    script = ("import json, os, sys; sys.path.insert(0, sys.argv[1])\n"
              "from roost.unix.terminal_waits import Prober\n"
              "print(json.dumps(Prober().probe_master(int(sys.argv[2]), int(sys.argv[3]))))\n")
    master, slave = os.openpty()
    program = subprocess.Popen([PYTHON, "-c", "input('? ')"], stdin=slave, stdout=slave, stderr=slave,
                               start_new_session=True)
    os.close(slave)
    try:
        wait_for(lambda: _reads(program.pid), what="the program to read")
        argv = [PYTHON, "-c", script, os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                str(program.pid), str(master)]
        mine = json.loads(subprocess.run(argv, capture_output=True, pass_fds=(master,), timeout=30).stdout)
        assert mine["verdict"] == "reads"
        # The same look as another user, without the capability to trace (with a
        # Python that user may run: ours may be under root's home).
        other_python = next((path for path in ("/usr/bin/python3", "/usr/local/bin/python3")
                             if os.path.exists(path)), PYTHON)
        theirs = subprocess.run([other_python] + argv[1:], capture_output=True, pass_fds=(master,), timeout=30, user=65534,
                                group=65534, extra_groups=[], cwd="/")
        evidence = json.loads(theirs.stdout)
        assert evidence["verdict"] == "unknown" and evidence["seen"][0]["does"] == "unreadable", theirs.stderr
    finally:
        program.kill()
        program.wait()
        os.close(master)


def _reads(pid):
    try:
        call = syscalls.read_call(pid)
    except OSError:
        return False
    return getattr(call, "kind", None) == syscalls.READS


def test_downstream_a_wait_is_a_status_and_an_unknown_row_is_no_question():
    """The hub's groups, notifications, the feed's line, `roost list` and the digests key
    on status waiting; a blocked row roost cannot read is `?`, never a question."""
    from roost.cli.commands.list import state_text
    from roost.concierge.digests import _row_line, needs_of
    from roost.hub.fleet import group_of
    from roost.hub.screen import unknown
    from roost.jobs.news import describe
    from roost.notify.notifier import need

    base = {"id": "j1", "name": "node", "summary": "your colour?", "question": None, "stateSince": 1}
    asks = dict(base, state="blocked", status="waiting", waitingFor="question", question="your colour?")
    cannot_tell = dict(base, state="blocked", status=None, waitingFor=None)
    works = dict(base, state="working", status="busy", waitingFor=None)
    assert [group_of(row) for row in (asks, cannot_tell, works)] == ["needs", "working", "working"]
    assert [need(row) for row in (asks, cannot_tell, works)] == ["question", None, None]
    assert [state_text(row) for row in (asks, cannot_tell, works)] == ["waiting", "?", "working"]
    assert [unknown(row) for row in (asks, cannot_tell, works)] == [False, True, False]
    assert describe(cannot_tell) == "in a state roost cannot read (?)"
    assert needs_of([asks, cannot_tell, works]) == [asks]
    assert "(?: roost cannot tell whether it waits)" in _row_line(cannot_tell)
