"""The flight recorder and `roost explain` (issue 19 item 3): each job's timeline holds
its states with the rule that decided each and the screen then, what roost typed and
whether it was submitted, dialogs and who answered them, its starts and adoptions;
`explain` says in words why a row says what it says. A real daemon, real ptys."""

import json
import os

from conftest import wait_for
from dialogkit import in_dialog, launch
from jobkit import agent, dispatch, row, wait_row, write_config
from roost.jobs import timeline

PROMPT = {"settleMs": 200, "waiting": r"^>"}


def entries(daemon, job_id, kind=None):
    found = daemon.call("timeline", id=job_id)["entries"]
    return [entry for entry in found if kind is None or entry["kind"] == kind]


def waiting(current):
    return current["status"] == "waiting" and current["waitingFor"] in ("question", "first-prompt")


def test_a_reply_is_recorded_with_the_states_around_it_and_the_rule_of_each(daemon):
    job_id = dispatch(daemon, agent("prompt_echo.py", "0.1"), term=PROMPT)
    wait_row(daemon, job_id, waiting, what="the prompt")
    assert daemon.call("reply", id=job_id, text="hello")["delivered"]
    wait_row(daemon, job_id, lambda current: waiting(current) and current["waitingFor"] == "question",
             what="the prompt after the answer")
    typed = wait_for(lambda: entries(daemon, job_id, "typed"), what="the typing recorded")
    assert typed[0]["text"] == "hello" and typed[0]["submitted"] and typed[0]["from"] == "reply"
    states = wait_for(lambda: [entry for entry in entries(daemon, job_id, "state")
                               if entry["waitingFor"] == "question"], what="the waiting after it")
    last = states[-1]
    assert last["why"]["rule"] == "waiting" and last["why"]["pattern"] == "^>"
    # The first line the pattern matches decides, here the old input line: the record
    # shows it as it is (a pattern that loose is what `explain` is for).
    assert last["why"]["line"] == "> hello" and "echo: hello" in last["screen"]
    started = entries(daemon, job_id, "started")
    assert started and started[0]["argv"][-2:] == [os.path.join(os.path.dirname(__file__), "agents",
                                                                "prompt_echo.py"), "0.1"]


def test_a_dialog_and_who_answered_it(daemon, tmp_path):
    job_id = launch(daemon, tmp_path, agent("dialog_first.py"))
    wait_row(daemon, job_id, in_dialog, what="the dialog")
    dialog = wait_for(lambda: [entry for entry in entries(daemon, job_id, "state")
                               if entry["waitingFor"] == "dialog"], what="the dialog recorded")[0]
    assert dialog["why"]["rule"] == "dialog" and dialog["why"]["line"] == "Do you trust the files in this folder?"
    assert "1. Yes, proceed" in dialog["screen"]
    daemon.call("reply", id=job_id, text="1")
    wait_row(daemon, job_id, waiting, what="the prompt")
    typed = wait_for(lambda: entries(daemon, job_id, "typed"), what="the answer recorded")[0]
    assert typed["into"] == "dialog" and typed["text"] == "1" and typed["submitted"]
    after = wait_for(lambda: [entry for entry in entries(daemon, job_id, "state") if entry.get("answeredBy")],
                     what="the end of the dialog recorded")[0]
    assert after["answeredBy"] == "a reply"


def test_restarts_and_adoptions_are_recorded(daemon):
    job_id = dispatch(daemon, agent("prompt_echo.py", "0.1"), term=PROMPT)
    wait_row(daemon, job_id, waiting, what="the prompt")
    daemon.call("stop", id=job_id)
    daemon.call("respawn", id=job_id)
    wait_row(daemon, job_id, waiting, what="the prompt again")
    daemon.kill9()
    daemon.start()
    wait_for(lambda: entries(daemon, job_id, "adopted"), what="the adoption recorded")
    kinds = [entry["kind"] for entry in entries(daemon, job_id)]
    assert kinds.count("started") == 2 and kinds.index("started") < kinds.index("adopted")
    ended = [entry for entry in entries(daemon, job_id, "state") if entry["state"] == "stopped"]
    assert ended and ended[0]["why"] == {"rule": "run-end"}


def explained(daemon, job_id):
    return daemon.call("explain", id=job_id)["text"]


def test_explain_a_waiting_a_working_an_unknown_and_a_dialog_row(daemon, tmp_path):
    waits = dispatch(daemon, agent("prompt_echo.py", "0.1"), term=PROMPT)
    wait_row(daemon, waits, waiting, what="the prompt")
    text = explained(daemon, waits)
    assert "waiting for its first prompt" in text and "waiting pattern /^>/" in text and "'>'" in text

    # Quiet while it works (a spinner that stopped): its working pattern decides.
    works = dispatch(daemon, agent("prompt_echo.py", "60"), term=dict(PROMPT, working=r"^working\.\.\.$"))
    wait_row(daemon, works, waiting, what="the prompt")
    daemon.call("reply", id=works, text="go")
    wait_for(lambda: "working pattern" in explained(daemon, works), what="the working pattern to decide")
    text = explained(daemon, works)
    assert "is working" in text and "/^working\\.\\.\\.$/ matched the screen's line 'working...'" in text

    unknown = dispatch(daemon, agent("prompt_echo.py", "0.1"), term={"settleMs": 200, "waiting": r"^never$"})
    wait_row(daemon, unknown, lambda current: current["state"] == "blocked" and current["status"] is None,
             what="an unread screen")
    assert "matched none of its profile's patterns" in explained(daemon, unknown)

    asks = launch(daemon, tmp_path, agent("dialog_first.py"))
    wait_row(daemon, asks, in_dialog, what="the dialog")
    text = explained(daemon, asks)
    assert "blocked on a dialog ('Do you trust the files in this folder?')" in text
    assert "1. Yes, proceed, 2. No, exit" in text and "roost never types into a dialog" in text

    result = daemon.cli("explain", waits)
    assert result.returncode == 0 and "waiting for its first prompt" in " ".join(result.stdout.decode().split())
    shown = daemon.cli("timeline", waits, "--json")
    assert "started" in [entry["kind"] for entry in json.loads(shown.stdout)["entries"]]
    shown = daemon.cli("timeline", waits)
    assert shown.returncode == 0 and b"state blocked/waiting/first-prompt  [waiting /^>/" in shown.stdout


def test_doctor_screens_lists_a_state_the_current_profile_reads_otherwise(daemon, tmp_path):
    job_id = launch(daemon, tmp_path, agent("dialog_first.py"))
    wait_row(daemon, job_id, in_dialog, what="the dialog")
    wait_for(lambda: [entry for entry in entries(daemon, job_id, "state") if entry["waitingFor"] == "dialog"],
             what="the dialog recorded")
    assert daemon.call("doctor", screens=True)["changes"] == []
    # The profile now names no dialog: the same recorded screen would be read otherwise.
    write_config(daemon.home, {"agentProfiles": {"tui": {"command": agent("dialog_first.py"), "task": "type",
                                                         "term": {"settleMs": 200, "waiting": r"^prompt>$"}}}})
    drift = daemon.call("doctor", screens=True)
    changed = [change for change in drift["changes"] if change["id"] == job_id]
    assert [(change["was"]["waitingFor"], change["now"]["waitingFor"]) for change in changed] == [("dialog", None)], \
        (drift, entries(daemon, job_id))


def test_the_timeline_is_bounded_and_never_written_through_a_planted_link(tmp_path):
    target = tmp_path / "elsewhere"
    target.write_text("mine\n")
    directory = tmp_path / "job"
    directory.mkdir()
    os.symlink(target, directory / timeline.FILE)
    line = json.dumps({"at": 1, "kind": "x", "pad": "y" * 1000}).encode() + b"\n"
    timeline.append(str(directory), [line] * 3)      # one by one, and in one batch
    timeline.append(str(directory), [line] * (timeline.MAX_BYTES // len(line) + 7))
    assert target.read_text() == "mine\n"
    assert (directory / timeline.OLDER).stat().st_size >= timeline.MAX_BYTES
    assert (directory / timeline.FILE).stat().st_size < timeline.MAX_BYTES
    assert len(timeline.read(str(directory))) == timeline.MAX_BYTES // len(line) + 10
