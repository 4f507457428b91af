"""Issue 16 item 9: what the CLI prints from agents (a job's name, summary and question,
events, peers, the board) has its control characters made visible, so an agent's text
cannot drive the person's terminal; `--json` prints the op's result as it is (JSON
escapes them itself)."""

import json

from jobkit import dispatch, job_token
from protokit import start

EVIL = "evil\x1b]0;pwned\x07\x1b[2J\x9b31m\u202e"
SHOWN = "evil\\x1b]0;pwned\\x07\\x1b[2J\\x9b31m\\u202e"


def printed(daemon, *argv):
    done = daemon.cli(*argv)
    assert done.returncode == 0, done.stderr
    return done.stdout.decode("utf-8")


def assert_no_controls(text):
    assert not any(ord(char) < 0x20 and char != "\n" or 0x7f <= ord(char) <= 0x9f or char == "\u202e"
                   for char in text), repr(text)


def test_a_jobs_name_summary_and_question_with_escapes_print_visible(daemon):
    job = start(daemon, "recorder")
    job.wait_row(lambda current: current.get("capabilities") is not None, "its hello")
    daemon.call("rename", id=job.id, name=EVIL)
    daemon.call("report", id=job.id, token=job_token(daemon.home, job.id),
                report={"state": "blocked", "status": "waiting", "waitingFor": "question",
                        "summary": "sum " + EVIL, "question": "ask " + EVIL})
    listed = printed(daemon, "list")
    assert_no_controls(listed)
    assert "sum " + SHOWN[:20] in listed
    events = printed(daemon, "events")
    assert_no_controls(events)
    assert SHOWN[:20] in events
    # --json: the op's result exactly, its control characters escaped by JSON itself.
    as_json = printed(daemon, "list", "--json")
    assert "\x1b" not in as_json and "\x07" not in as_json
    [row] = [row for row in json.loads(as_json)["jobs"] if row["id"] == job.id]
    assert row["name"] == " ".join(EVIL.split()) and row["summary"] == "sum " + EVIL


def test_peers_and_a_refusal_print_visible(daemon):
    helper = dispatch(daemon, ["sleep", "60"], name="helper")
    daemon.call("rename", id=helper, name="peer " + EVIL)
    other = dispatch(daemon, ["sleep", "60"], name="other")
    env = {"ROOST_JOB_ID": other, "ROOST_JOB_TOKEN": job_token(daemon.home, other)}
    done = daemon.cli("peers", env=env)
    assert done.returncode == 0, done.stderr
    assert_no_controls(done.stdout.decode())
    assert "peer " + SHOWN[:20] in done.stdout.decode()
    refusal = daemon.cli("reply", "nobody\x1b[2J", "hi")
    assert refusal.returncode == 1
    assert_no_controls(refusal.stderr.decode())
