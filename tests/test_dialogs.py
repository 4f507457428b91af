"""roost never types into a dialog, nor into a screen it cannot read: with a profile that
names `waiting`, the task and queued replies are typed only once `waiting` matches. A
profile's `dialog` makes the row say so (its question and choices); the user answers it
with `roost reply` or `roost keys`. Fake TUIs in tests/agents/ draw a dialog before their
prompt (Enter alone accepts it) and a prompt that comes late."""

import json
import os

import pytest

from conftest import wait_for
from dialogkit import in_dialog, launch
from jobkit import agent, output, row, stays, wait_row


def typed(cwd):
    try:
        with open(os.path.join(cwd, "input.log"), encoding="utf-8") as handle:
            return handle.read().splitlines()
    except FileNotFoundError:
        return []


def test_a_dialog_is_shown_as_one_and_nothing_is_typed_into_it(daemon, tmp_path):
    job_id = launch(daemon, tmp_path, agent("dialog_first.py"), task="build it")
    current = wait_row(daemon, job_id, in_dialog, what="the dialog on the row")
    assert (current["state"], current["status"]) == ("blocked", "waiting")
    assert current["question"] == "Do you trust the files in this folder?"
    assert current["choices"] == ["1. Yes, proceed", "2. No, exit"]
    assert current["queued"] == 1                     # the task waits
    # Several settle times later the dialog still has nothing in it.
    stays(lambda: typed(tmp_path) == [] and in_dialog(row(daemon, job_id)), 1.0, "typed into the dialog")


@pytest.mark.parametrize("how", ["keys Enter", "reply 1"])
def test_the_user_answers_the_dialog_and_then_the_task_is_typed(daemon, tmp_path, how):
    job_id = launch(daemon, tmp_path, agent("dialog_first.py"), task="build it")
    wait_row(daemon, job_id, in_dialog, what="the dialog on the row")
    command, word = how.split()
    answered = daemon.cli(command, "--json", job_id, word)
    assert answered.returncode == 0, answered.stderr
    if command == "reply":
        assert json.loads(answered.stdout)["delivered"] is True     # typed: the user's own answer
    wait_for(lambda: "got: build it" in output(daemon.home, job_id), what="the task typed at the prompt")
    assert typed(tmp_path) == ["dialog: " + ("1" if command == "reply" else ""), "prompt: build it"]
    current = wait_row(daemon, job_id, lambda current: current["queued"] == 0 and current["waitingFor"] == "question",
                       what="the row waiting for an answer")
    assert current["question"] is None and current["choices"] == []     # the dialog's are gone with it


def test_a_prompt_drawn_late_gets_the_task_once_it_is_there(daemon, tmp_path):
    job_id = launch(daemon, tmp_path, agent("late_prompt.py", 1.5), task="the task")
    wait_for(lambda: "got: the task" in output(daemon.home, job_id), timeout=15, what="the task at the prompt")
    assert output(daemon.home, job_id).count("got:") == 1


def test_a_screen_no_pattern_matches_is_unknown_and_not_typed_into(daemon, tmp_path):
    # Quiet long past the settle time, showing neither the prompt nor a dialog.
    job_id = launch(daemon, tmp_path, agent("late_prompt.py", 30), task="the task")
    current = wait_row(daemon, job_id, lambda current: current["state"] == "blocked", what="a judged screen")
    assert current["status"] is None and current["waitingFor"] is None
    refused = daemon.call("reply", id=job_id, text="a reply")
    assert refused == {"delivered": False, "saved": True}         # kept, not typed
    stays(lambda: "got:" not in output(daemon.home, job_id), 1.0, "typed into an unknown screen")


def test_without_patterns_a_quiet_screen_is_taken_for_waiting(daemon, tmp_path):
    """The settle rule: a guess, for a program roost knows nothing of."""
    job_id = launch(daemon, tmp_path, agent("late_prompt.py", 0.1), task="the task", term={"settleMs": 200})
    wait_for(lambda: "got: the task" in output(daemon.home, job_id), what="the task typed")


def test_keys_by_name_reach_the_terminal_and_bad_names_are_refused(daemon, tmp_path):
    job_id = launch(daemon, tmp_path, agent("dialog_first.py"))
    wait_row(daemon, job_id, in_dialog, what="the dialog on the row")
    bad = daemon.cli("keys", job_id, "Sideways")
    assert bad.returncode == 1 and b"'Sideways' is not a key roost knows" in bad.stderr
    assert daemon.cli("keys", job_id, "2", "Enter").returncode == 0
    wait_for(lambda: "not trusted: bye" in output(daemon.home, job_id), what="the dialog's no")
    assert typed(tmp_path) == ["dialog: 2"]
