"""Notifications (issue 18 item 2): once per transition into "needs you", to each sink
roost.json names (a fake `notify-send` on PATH, a command of the user's reading the
notification as JSON on stdin, the hubs' terminals), routed by attention, masked."""

import base64
import json
import os

import pytest

from boardkit import prepared_and_started, project_repo, task_op, wait_stage
from conftest import DaemonProcess, PYTHON, tracebacks_in_log, wait_for
from gitkit import commit_file, isolated_git  # noqa: F401 (no global git configuration)
from jobkit import agent, dispatch, wait_row, wait_state, write_config
from notifykit import Sinks
from roost.notify.masking import mask

@pytest.fixture
def sinks(home):
    return Sinks(os.path.dirname(home))


def start(home, sinks, **settings):
    os.makedirs(home, exist_ok=True)
    write_config(home, {"notify": {"command": sinks.command(), **settings}})
    return DaemonProcess(home, sinks.env).start()


@pytest.fixture
def daemon_with_sinks(home, sinks):
    process = start(home, sinks)
    yield process
    process.stop()
    problems = tracebacks_in_log(home)
    assert not problems, "the daemon logged a traceback:\n" + problems[-4000:]


def asker(daemon, name="asker"):
    return dispatch(daemon, agent("asks_question.py"), name=name, term={"settleMs": 200})


def notify_pushes(client):
    """The notify pushes this subscribed connection got before a ping's answer: each
    one queued before the ping was sent."""
    client.call("ping")
    pushes = [message for message in client.pending_events if message.get("event") == "notify"]
    client.pending_events = []
    return pushes


def test_a_question_is_told_once_to_the_desktop_and_the_command(daemon_with_sinks, sinks):
    daemon = daemon_with_sinks
    hub = daemon.client()
    hub.call("subscribe")
    job_id = asker(daemon)
    wait_state(daemon, job_id, "blocked")
    notes = wait_for(sinks.notes, what="the command's notification")
    desktop = wait_for(sinks.desktop, what="notify-send to be run")
    assert len(notes) == 1 and notes[0]["kind"] == "question" and notes[0]["id"] == job_id
    assert notes[0]["title"] == "roost: asker asks" and notes[0]["body"]
    assert notes[0]["waitingFor"] in ("question", "first-prompt") and notes[0]["reminder"] is False
    assert desktop[0][-3:] == ["--", notes[0]["title"], notes[0]["body"]]     # text, never an option
    assert "--urgency=critical" in desktop[0]
    assert len(notify_pushes(hub)) == 1
    # The same wait is never told again, however its row changes meanwhile.
    daemon.call("rename", id=job_id, name="asker-renamed")
    daemon.call("pin", id=job_id, pinned=True)
    assert notify_pushes(hub) == []
    # A new wait is: answered, it works, then asks again.
    since = wait_row(daemon, job_id, lambda row: True)["stateSince"]
    daemon.call("reply", id=job_id, text="2")
    wait_row(daemon, job_id, lambda row: row["state"] == "blocked" and row["stateSince"] != since,
             what="the second question")
    wait_for(lambda: len(sinks.notes()) == 2, what="the second notification")
    assert len(sinks.notes()) == 2 and len(wait_for(lambda: len(sinks.desktop()) == 2 and sinks.desktop())) == 2
    assert len(notify_pushes(hub)) == 1
    hub.close()


def test_a_failure_is_told(daemon_with_sinks, sinks):
    daemon = daemon_with_sinks
    job_id = dispatch(daemon, agent("works_a_while.py", 0.2, 0.05, 3), name="broken")
    wait_state(daemon, job_id, "failed")
    note = wait_for(sinks.notes, what="the failure's notification")[0]
    assert note["kind"] == "failure" and note["title"] == "roost: broken failed"
    assert "3" in note["body"]
    assert "--urgency=normal" in wait_for(sinks.desktop)[0]


def test_nothing_to_the_desktop_for_a_job_a_person_is_attached_to(daemon_with_sinks, sinks):
    daemon = daemon_with_sinks
    # It works 1.5 s after each answer (a sleep): the next question is a new wait.
    job_id = dispatch(daemon, agent("prompt_echo.py", 1.5), name="asker", term={"settleMs": 200})
    wait_for(lambda: len(sinks.notes()) == 1, what="the first question told")
    wait_for(lambda: len(sinks.desktop()) == 1, what="the first question on the desktop")
    with daemon.client() as client:
        client.call("attach", {"id": job_id})
        since = wait_row(daemon, job_id, lambda row: True)["stateSince"]
        client.call("attach-input", {"id": job_id, "data": base64.b64encode(b"1\r").decode()})
        wait_row(daemon, job_id, lambda row: row["state"] == "blocked" and row["stateSince"] != since,
                 what="the second question")
        wait_for(lambda: len(sinks.notes()) == 2, what="the command's second notification")
        assert len(sinks.desktop()) == 1


def test_secrets_are_masked_before_they_leave(daemon_with_sinks, sinks):
    daemon = daemon_with_sinks
    secret = "sk-ant-abcdefghijklmnopqrstuvwx"
    job_id = dispatch(daemon, ["sh", "-c", f"printf 'use {secret} and password=hunter2? '; exec cat"], name="leaky")
    wait_state(daemon, job_id, "blocked")
    note = wait_for(sinks.notes, what="the notification")[0]
    text = json.dumps(note) + json.dumps(wait_for(sinks.desktop))
    assert secret not in text and "hunter2" not in text
    assert "***" in note["body"] and "password=***" in note["body"]


def test_a_kind_turned_off_is_not_told(home, sinks):
    daemon = start(home, sinks, question=False)
    try:
        failed = dispatch(daemon, agent("works_a_while.py", 0.2, 0.05, 3), name="broken")
        wait_state(daemon, asker(daemon), "blocked")
        wait_state(daemon, failed, "failed")
        wait_for(sinks.notes, what="the failure told")
        assert [note["kind"] for note in sinks.notes()] == ["failure"]
    finally:
        daemon.stop()


def test_one_reminder_for_a_question_still_unanswered(home, sinks):
    daemon = start(home, sinks, reminderMinutes=0.02, desktop=False)   # 1.2 s
    try:
        job_id = asker(daemon)
        wait_state(daemon, job_id, "blocked")
        notes = wait_for(lambda: len(sinks.notes()) >= 2 and sinks.notes(), what="the reminder")
        assert [note["reminder"] for note in notes] == [False, True]
        assert notes[1]["title"] == "roost: asker asks (still waiting)"
        assert sinks.desktop() == []
    finally:
        daemon.stop()


def test_the_hubs_get_a_notify_push(daemon_with_sinks, sinks):
    daemon = daemon_with_sinks
    with daemon.client() as client:
        client.call("subscribe")
        job_id = asker(daemon)
        while True:
            message = client.next_event()
            if message.get("event") == "notify":
                break
    assert message["note"]["id"] == job_id and message["note"]["kind"] == "question"


def test_the_hub_writes_osc_9_777_and_the_bell(daemon_with_sinks, sinks):
    import pexpect

    daemon = daemon_with_sinks
    hub = pexpect.spawn(PYTHON, ["-m", "roost", "hub"], env={**daemon.env, "TERM": "xterm-256color"},
                        dimensions=(24, 80), timeout=15)
    hub.delaybeforesend = None
    try:
        hub.expect("no jobs yet")
        asker(daemon)
        hub.expect(r"\x1b\]9;roost: asker asks: [^\x07]+\x07\x1b\]777;notify;roost: asker asks;[^\x07]+\x07\x07")
        hub.send("q")
        hub.expect(pexpect.EOF)
    finally:
        hub.close()


def test_notify_test_sends_one_to_each_sink(daemon_with_sinks, sinks):
    result = daemon_with_sinks.cli("notify", "test")
    assert result.returncode == 0, result.stderr
    text = result.stdout.decode()
    assert "terminal  sent" in text and "desktop   sent" in text and "command   sent" in text
    assert wait_for(sinks.desktop)[0][-2:] == ["roost: a test notification", "roost notify test: this sink works"]
    assert wait_for(sinks.notes)[0]["kind"] == "test"


def test_notify_test_says_which_sink_failed(home, sinks):
    sinks.env["DBUS_SESSION_BUS_ADDRESS"] = ""
    daemon = start(home, sinks, command=[PYTHON, "-c", "import sys; sys.exit(4)"])
    try:
        result = daemon.cli("notify", "test", "--json", env={"XDG_RUNTIME_DIR": ""})
        assert result.returncode == 1
        outcome = {item["sink"]: item for item in json.loads(result.stdout)["sinks"]}
        assert outcome["terminal"]["ok"] and not outcome["command"]["ok"]
        assert "status 4" in outcome["command"]["error"]
        assert not outcome["desktop"]["ok"] and "session bus" in outcome["desktop"]["error"]
    finally:
        daemon.stop()


@pytest.mark.parametrize("text, hidden", [
    ("key sk-abcdefghijklmnopqrstuvwxyz123 here", "sk-abcdefghijklmnopqrstuvwxyz123"),
    ("gh token ghp_abcdefghijklmnopqrstuvwxyz0123456789", "ghp_abcdefghijklmnopqrstuvwxyz0123456789"),
    ("slack xoxb-1234567890-abcdefghij", "xoxb-1234567890-abcdefghij"),
    ("aws AKIAABCDEFGHIJKLMNOP", "AKIAABCDEFGHIJKLMNOP"),
    ("password=hunter2 next", "hunter2"),
    ("API_KEY: 'abc def'", "abc def"),
    ("Authorization: Bearer abcdefgh12345678", "abcdefgh12345678"),
    ("clone https://me:s3cret@example.com/repo", "s3cret"),
])
def test_masking_patterns(text, hidden):
    masked = mask(text)
    assert hidden not in masked and "***" in masked


def test_masking_leaves_plain_text_alone():
    text = "Which database should I use? 1) postgres 2) sqlite (task-key: skip)"
    assert mask(text) == text


def test_a_wait_that_ends_within_a_moment_is_not_told(daemon_with_sinks, sinks):
    daemon = daemon_with_sinks
    with daemon.client() as hub:
        hub.call("subscribe")
        # It reads its terminal, and is answered at once.
        flapper = dispatch(daemon, ["sh", "-c", "printf 'wait> '; read answer; exec \"$0\" \"$@\"",
                                    *agent("works_a_while.py", 60, 0.05)], name="flapper", term={"settleMs": 100})
        states = []
        # Until it was judged waiting and works again (a change of state is pushed at
        # once: its start's own pushes say working more than once before that).
        while not ("blocked" in states and states[-1] == "working"):
            message = hub.next_event()
            states += [row["state"] for row in message.get("rows") or () if row["id"] == flapper]
            if states[-1:] == ["blocked"] and states.count("blocked") == 1:
                daemon.call("reply", id=flapper, text="go", mode="steer")
        assert "blocked" in states                  # it was judged waiting, briefly
    # A wait that begins after the flapper's ended, told after its own moment: by then
    # the flapper's would have been told too.
    job_id = asker(daemon)
    wait_for(sinks.notes, what="the asker's notification")
    assert [note["id"] for note in sinks.notes()] == [job_id]


def test_a_task_in_review_is_told(daemon_with_sinks, sinks, tmp_path):
    from peerkit import speaker

    daemon = daemon_with_sinks
    root = project_repo(tmp_path / "repo")
    task = task_op(daemon, action="add", title="Add the feature", project=root)["task"]
    workspace, worker = prepared_and_started(daemon, task["id"])
    commit_file(workspace["path"], "feature.txt", "the feature\n")
    with speaker(daemon, worker) as client:
        task_op(client, action="done", id=task["id"], result="done")
    wait_stage(daemon, task["id"], "review")
    review = wait_for(lambda: [note for note in sinks.notes() if note["kind"] == "review"], what="the review told")
    assert len(review) == 1 and review[0]["task"] == task["id"] and review[0]["id"] == worker
    assert review[0]["title"] == "roost: worker is ready for review" and "#1 Add the feature" in review[0]["body"]


def test_nothing_to_the_desktop_for_the_job_selected_in_a_focused_hub(daemon_with_sinks, sinks):
    from tmuxkit import start_hub
    from tmuxkit import Tmux

    daemon = daemon_with_sinks
    tmux = Tmux(os.path.dirname(daemon.home), daemon.env)
    try:
        start_hub(tmux)
        tmux.wait_text("no jobs yet")
        job_id = asker(daemon)
        tmux.wait_text("NEEDS YOU (1)")                  # selected: the only row
        wait_for(lambda: len(sinks.notes()) == 1, what="the command told")
        assert sinks.desktop() == []
        tmux.type("\x1b[O")                              # the terminal says it lost the focus
        since = wait_row(daemon, job_id, lambda row: True)["stateSince"]
        daemon.call("reply", id=job_id, text="1")
        wait_row(daemon, job_id, lambda row: row["state"] == "blocked" and row["stateSince"] != since,
                 what="the second question")
        wait_for(lambda: len(sinks.desktop()) == 1, what="the desktop told, the hub not looked at")
        # The sinks are two processes, started together: either may finish first.
        wait_for(lambda: len(sinks.notes()) == 2, what="the command told of the second question")
        assert len(sinks.desktop()) == 1
    finally:
        tmux.stop()


def test_a_usage_limit_is_told_as_one_not_as_a_question(home, sinks, tmp_path):
    limited = {"command": agent("limit_tui.py", str(tmp_path / "typed.log"), 3600), "task": "type",
               "term": {"settleMs": 200, "waiting": r"^> ?$", "limit": r"^You've hit your limit · resets (?P<reset>.+)$"}}
    os.makedirs(home, exist_ok=True)
    write_config(home, {"notify": {"command": sinks.command()}, "agentProfiles": {"limited": limited}})
    daemon = DaemonProcess(home, sinks.env).start()
    try:
        job_id = daemon.call("dispatch", kind="shell", cwd=str(tmp_path), command=[], env={}, name="parked",
                             sessionFile="", origin="dispatch", profile="limited")["id"]
        wait_row(daemon, job_id, lambda row: row["waitingFor"] == "limit", what="the limit")
        [note] = wait_for(sinks.notes, what="the limit's notification")
        assert note["kind"] == "limit" and note["title"] == "roost: parked stopped at its usage limit"
        assert note["body"].startswith("it resets at ") and note["waitingFor"] == "limit"
        assert "--urgency=normal" in wait_for(sinks.desktop)[0]
    finally:
        daemon.stop()
