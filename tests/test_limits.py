"""issue 19 item 1: a job at its usage limit, on a real daemon with a fake TUI
(tests/agents/limit_tui.py): its row reads `waitingFor: "limit"` with `resetsAt`, and
`roost explain` says when it resets."""

import json
import os
import time

from conftest import wait_for
from jobkit import agent, job_record, row, wait_row, write_config

LIMIT_TERM = {"settleMs": 200, "waiting": r"^> ?$",
              "limit": r"^You've hit your limit · resets (?P<reset>.+)$"}


def profile(**extra):
    return dict({"command": [], "task": "type", "term": LIMIT_TERM}, **extra)


def launch(daemon, cwd, *args, name="", profile_name="limited", config=None, env=None):
    config = dict(config or {})
    config.setdefault("agentProfiles", {"limited": profile()})
    for entry in config["agentProfiles"].values():
        entry["command"] = entry["command"] or agent("limit_tui.py", os.path.join(cwd, "typed.log"), *args)
    write_config(daemon.home, config)
    return daemon.call("dispatch", kind="shell", cwd=str(cwd), command=[], env=env or {}, name=name,
                       sessionFile="", origin="dispatch", profile=profile_name)["id"]


def typed(cwd):
    try:
        with open(os.path.join(cwd, "typed.log"), encoding="utf-8") as handle:
            return [line.split(" ", 1) for line in handle.read().splitlines()]
    except FileNotFoundError:
        return []


def at_limit(daemon, job_id, timeout=10):
    return wait_row(daemon, job_id, lambda current: current["waitingFor"] == "limit", timeout,
                    what="the row to read limit")


def test_a_limit_screen_reads_as_limit_with_when_it_resets(daemon, tmp_path):
    job_id = launch(daemon, tmp_path, 3600, "3:05pm (Europe/Berlin)")
    current = at_limit(daemon, job_id)
    assert current["state"] == "blocked" and current["status"] == "waiting"
    assert current["summary"] == "You've hit your limit · resets 3:05pm (Europe/Berlin)"
    resets_at = current["resetsAt"]
    assert resets_at > time.time() * 1000 - 5 * 60_000
    assert time.strftime("%H:%M", time.gmtime(resets_at / 1000)) in ("14:05", "13:05")   # CET, CEST
    seen = wait_for(lambda: job_record(daemon.home, job_id).get("limitSeen"), what="limitSeen on disk")
    assert seen["text"] == "3:05pm (Europe/Berlin)"
    text = daemon.call("explain", id=job_id)["text"]
    clock = time.strftime("%H:%M", time.localtime(resets_at / 1000))
    assert f'stopped at its usage limit; resets at {clock} (from the screen\'s "3:05pm (Europe/Berlin)")' in text
    assert "limit pattern" in text
    entries = [json.loads(line) for line in open(os.path.join(daemon.home, "jobs", job_id, "timeline.jsonl"))]
    limited = [entry for entry in entries if entry["kind"] == "state" and entry.get("waitingFor") == "limit"]
    assert limited and limited[-1]["resetsAt"] == resets_at and limited[-1]["why"]["rule"] == "limit"


def steer_and_read_again(daemon, job_id, cwd, text):
    """Type `text` at once: the fake shows its limit again, and the screen is read again."""
    count = len(typed(cwd))
    since = time.time() * 1000
    daemon.call("reply", id=job_id, text=text, mode="steer")
    wait_for(lambda: len(typed(cwd)) == count + 1, what="the steer to be typed")
    return wait_row(daemon, job_id, lambda current: current["waitingFor"] == "limit"
                    and current["stateSince"] >= since, what="the limit read again")


def test_a_duration_is_counted_from_when_the_screen_first_showed_it(daemon, tmp_path):
    job_id = launch(daemon, tmp_path, 3600, "in 2h")
    first = at_limit(daemon, job_id)["resetsAt"]
    assert abs(first - (time.time() * 1000 + 7_200_000)) < 60_000
    assert steer_and_read_again(daemon, job_id, tmp_path, "hello")["resetsAt"] == first
    daemon.kill9()
    daemon.start()
    assert steer_and_read_again(daemon, job_id, tmp_path, "again")["resetsAt"] == first


def test_a_limit_that_gives_no_reset_time_says_so(daemon, tmp_path):
    job_id = launch(daemon, tmp_path, 3600, "whenever it likes")
    current = at_limit(daemon, job_id)
    assert current["resetsAt"] is None
    text = daemon.call("explain", id=job_id)["text"]
    assert "the screen's \"whenever it likes\" gives no reset time roost can read" in text


def test_the_row_carries_no_reset_once_it_works_again(daemon, tmp_path):
    job_id = launch(daemon, tmp_path, 0.5)
    resets_at = at_limit(daemon, job_id)["resetsAt"]
    assert resets_at is not None
    wait_for(lambda: time.time() * 1000 > resets_at, timeout=5, what="the reset")
    daemon.call("reply", id=job_id, text="continue", mode="steer")
    current = wait_row(daemon, job_id, lambda current: current["waitingFor"] == "question",
                       what="the agent to answer")
    assert current["resetsAt"] is None
