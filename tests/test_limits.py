"""issue 19 item 1: a job at its usage limit, on a real daemon with a fake TUI
(tests/agents/limit_tui.py): its row reads `waitingFor: "limit"` with `resetsAt`, and
`roost explain` says when it resets; at the reset roost types the profile's
`limitResume` text once (and not when that is off); `roost limits` groups the parked."""

import json
import os
import re
import time

import pytest

from clockkit import MovableClockDaemon, advance, advance_to, agent_env, agent_sandbox, now_ms
from conftest import serving, wait_for
from jobkit import agent, edit_schedules, job_record, row, wait_row, write_config

LIMIT_TERM = {"settleMs": 200, "waiting": r"^> ?$",
              "limit": r"^You've hit your limit · resets (?P<reset>.+)$"}


def profile(**extra):
    return dict({"command": [], "task": "type", "term": LIMIT_TERM, "limitResume": "continue"}, **extra)


# The resume comes this long after the reset (roost.json limitResumeDelayMs), not 30 s.
QUICK = {"limitResumeDelayMs": 300}
DUE_MS = 301        # from a reset until its resume is due


@pytest.fixture
def daemon(home):
    """The daemon of these tests runs on a clock they move (tests/clockkit.py): a reset
    comes when the test says, never by waiting for it."""
    yield from serving(MovableClockDaemon(home))


def launch(daemon, cwd, *args, name="", profile_name="limited", config=None, env=None):
    os.makedirs(cwd, exist_ok=True)
    config = dict(QUICK, sandbox=agent_sandbox(daemon), **(config or {}))
    command = agent("limit_tui.py", os.path.join(cwd, "typed.log"), *args)
    config["agentProfiles"] = {name: dict(entry, command=command)
                               for name, entry in config.get("agentProfiles", {"limited": profile()}).items()}
    write_config(daemon.home, config)
    return daemon.call("dispatch", kind="shell", cwd=str(cwd), command=[], env=dict(agent_env(daemon), **(env or {})),
                       name=name, sessionFile="", origin="dispatch", profile=profile_name)["id"]


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
    assert "roost types 'continue' into it at" in text
    listed = daemon.cli("list").stdout.decode()
    assert re.search(rf"{job_id}\s+limit\s+\S+\s+—\s+limited\s+You've hit your limit · resets 3:05pm", listed)
    entries = [json.loads(line) for line in open(os.path.join(daemon.home, "jobs", job_id, "timeline.jsonl"))]
    limited = [entry for entry in entries if entry["kind"] == "state" and entry.get("waitingFor") == "limit"]
    assert limited and limited[-1]["resetsAt"] == resets_at and limited[-1]["why"]["rule"] == "limit"
    shown = daemon.cli("timeline", job_id).stdout.decode()
    assert "state blocked/waiting/limit  [limit /^You've hit your limit" in shown
    assert f"resets at {time.strftime('%H:%M:%S', time.localtime(resets_at / 1000))}" in shown


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
    job_id = launch(daemon, tmp_path, 600, config={"limitResume": False})
    resets_at = at_limit(daemon, job_id)["resetsAt"]
    assert resets_at is not None
    advance_to(daemon, resets_at + 1)
    daemon.call("reply", id=job_id, text="continue", mode="steer")
    current = wait_row(daemon, job_id, lambda current: current["waitingFor"] == "question",
                       what="the agent to answer")
    assert current["resetsAt"] is None


def lines_typed(cwd):
    return [line for _, line in typed(cwd)]


def stays(predicate, seconds, what):
    """`predicate` holds at every look for `seconds` (a bounded watch, not a sleep)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert predicate(), what
        time.sleep(0.05)


def events(daemon, kind):
    return [event for event in daemon.call("events", limit=500)["events"] if event["kind"] == kind]


def test_a_parked_job_is_resumed_at_its_reset_exactly_once(daemon, tmp_path):
    job_id = launch(daemon, tmp_path, 600)
    resets_at = at_limit(daemon, job_id)["resetsAt"]
    assert resets_at is not None
    daemon.call("reply", id=job_id, text="a queued reply")      # waits: a limit screen takes no text
    stays(lambda: lines_typed(tmp_path) == [], 0.5, "nothing typed before the reset")
    advance_to(daemon, resets_at + DUE_MS)
    answered = wait_row(daemon, job_id, lambda current: current["waitingFor"] == "question"
                        and current["queued"] == 0, timeout=15, what="the resume and the queued reply")
    assert answered["resetsAt"] is None
    got = typed(tmp_path)
    assert [line for _, line in got] == ["continue", "a queued reply"]
    assert int(got[0][0]) >= resets_at        # nothing was typed while it was at its limit
    stays(lambda: lines_typed(tmp_path) == ["continue", "a queued reply"], 1.0, "nothing more typed")
    resumed = events(daemon, "limit")
    assert len(resumed) == 1 and resumed[0]["id"] == job_id and resumed[0]["resumed"] is True
    assert "typed 'continue'" in resumed[0]["text"]
    entries = [json.loads(line) for line in open(os.path.join(daemon.home, "jobs", job_id, "timeline.jsonl"))]
    typings = [entry for entry in entries if entry["kind"] == "typed" and entry["from"] == "limit-resume"]
    assert len(typings) == 1 and typings[0]["submitted"] is True and typings[0]["text"] == "continue"


def test_no_resume_when_it_is_off_for_the_job(daemon, tmp_path):
    job_id = launch(daemon, tmp_path, 600)
    at_limit(daemon, job_id)
    result = daemon.cli("limits", "off", job_id, "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"id": job_id, "resume": False}
    listed = json.loads(daemon.cli("limits", "--json").stdout)["groups"]
    assert listed[0]["jobs"][0]["resume"] is False and "off for this job" in listed[0]["jobs"][0]["why"]
    assert "roost does not resume it at the reset: limit resumes are off for this job" in \
        daemon.call("explain", id=job_id)["text"]
    resets_at = row(daemon, job_id)["resetsAt"]
    advance_to(daemon, resets_at + DUE_MS + 60_000)
    stays(lambda: lines_typed(tmp_path) == [] and row(daemon, job_id)["waitingFor"] == "limit", 1.0,
          "nothing typed")
    assert daemon.cli("limits", "on", job_id).returncode == 0
    wait_for(lambda: lines_typed(tmp_path) == ["continue"], timeout=10, what="the resume once turned on")


def test_no_resume_when_the_profile_names_none(daemon, tmp_path):
    job_id = launch(daemon, tmp_path, 600, config={"agentProfiles": {"limited": profile(limitResume=None)}})
    resets_at = at_limit(daemon, job_id)["resetsAt"]
    advance_to(daemon, resets_at + DUE_MS + 60_000)
    stays(lambda: lines_typed(tmp_path) == [], 1.0, "nothing typed")
    listed = json.loads(daemon.cli("limits", "--json").stdout)["groups"]
    assert listed[0]["jobs"][0]["resume"] is False
    assert listed[0]["jobs"][0]["why"] == "its profile names no limitResume text"


def test_no_resume_when_roost_json_turns_them_off(daemon, tmp_path):
    job_id = launch(daemon, tmp_path, 600, config={"limitResume": False})
    resets_at = at_limit(daemon, job_id)["resetsAt"]
    advance_to(daemon, resets_at + DUE_MS + 60_000)
    stays(lambda: lines_typed(tmp_path) == [], 1.0, "nothing typed")


def test_a_daemon_killed_while_jobs_are_parked_still_resumes_them_once(daemon, tmp_path):
    job_id = launch(daemon, tmp_path, 600)
    resets_at = at_limit(daemon, job_id)["resetsAt"]
    wait_for(lambda: job_record(daemon.home, job_id).get("resetsAt") == resets_at, what="the reset on disk")
    daemon.kill9()
    daemon.start()
    advance_to(daemon, resets_at + DUE_MS)
    wait_row(daemon, job_id, lambda current: current["waitingFor"] == "question", timeout=20,
             what="the resume after the restart")
    got = typed(tmp_path)
    assert [line for _, line in got] == ["continue"] and int(got[0][0]) >= resets_at
    stays(lambda: lines_typed(tmp_path) == ["continue"], 1.0, "nothing more typed")


def test_roost_limits_groups_the_jobs_of_one_provider_that_hit_it_together(daemon, tmp_path):
    config = {"agentProfiles": {"limited": profile(provider="acme"), "other": profile(provider="zenith")}}
    first = launch(daemon, tmp_path / "a", 3600, "in 1h", name="one", config=config)
    second = launch(daemon, tmp_path / "b", 3600, "in 61m", name="two", config=config)
    third = launch(daemon, tmp_path / "c", 3600, "in 1h", name="three", profile_name="other", config=config)
    for job_id in (first, second, third):
        at_limit(daemon, job_id)
    result = daemon.cli("limits", "--json")
    assert result.returncode == 0, result.stderr
    groups = json.loads(result.stdout)["groups"]
    assert [(group["provider"], sorted(job["id"] for job in group["jobs"])) for group in groups] == \
        [("acme", sorted([first, second])), ("zenith", [third])]
    assert all(job["resume"] is True for group in groups for job in group["jobs"])
    text = daemon.cli("limits").stdout.decode()
    assert "acme: resets at" in text and "(2 jobs)" in text and "types 'continue' at" in text


def test_an_agent_still_at_its_limit_after_the_resume_is_not_typed_into_again(daemon, tmp_path):
    # The screen says "in 1m" but the agent's limit lasts an hour: "continue" meets it again.
    job_id = launch(daemon, tmp_path, 3600, "in 1m")
    resets_at = at_limit(daemon, job_id)["resetsAt"]
    advance_to(daemon, resets_at + DUE_MS)
    wait_for(lambda: lines_typed(tmp_path) == ["continue"], timeout=10, what="the resume")
    at_limit(daemon, job_id)
    advance(daemon, 5 * 60_000)       # the same text a while later: the same limit, resumed once
    stays(lambda: lines_typed(tmp_path) == ["continue"], 1.0, "no second resume")
    listed = json.loads(daemon.cli("limits", "--json").stdout)["groups"][0]["jobs"][0]
    assert listed["resumed"] is True and listed["resume"] is False


def test_a_schedule_into_a_known_limit_is_skipped_and_runs_at_the_reset(daemon, tmp_path):
    config = {"agentProfiles": {"limited": profile(provider="acme", limitResume=None)}}
    parked = launch(daemon, tmp_path / "parked", 600, config=config)
    resets_at = at_limit(daemon, parked)["resetsAt"]
    os.makedirs(tmp_path / "scheduled")
    daemon.call("schedule-add", name="later", when="every 1h",
                launch={"kind": "shell", "cwd": str(tmp_path / "scheduled"), "command": [], "env": {},
                        "name": "", "sessionFile": "", "origin": "dispatch", "profile": "limited"})
    daemon.stop()
    due = now_ms(daemon) + 60_000       # after the daemon's start, before the reset

    def soon(record):
        record["createdAt"] = due - 3_600_000
        record["nextAt"] = due
    edit_schedules(daemon.home, soon)
    daemon.start()
    assert due < resets_at
    listed = lambda: next(item for item in daemon.call("schedules")["schedules"] if item["name"] == "later")
    at_limit(daemon, parked)       # adopted, and read as at its limit again
    advance_to(daemon, due)
    skipped = wait_for(lambda: listed()["lastSkip"], timeout=20, what="the skip")
    clock = time.strftime("%H:%M", time.localtime(resets_at / 1000))
    assert skipped["why"] == f"the acme usage limit resets at {clock}"
    assert listed()["lastJob"] is None
    advance_to(daemon, resets_at)
    ran = wait_for(lambda: listed()["lastJob"] and listed(), timeout=30, what="the run at the reset")
    assert ran["lastRunAt"] >= resets_at
    assert ran["nextAt"] == due + 3_600_000        # its clock is as it was
    started = row(daemon, ran["lastJob"])
    assert started["cwd"] == str(tmp_path / "scheduled")


def test_a_board_start_into_a_known_limit_waits_for_the_reset(daemon, tmp_path):
    from boardkit import project_repo, task_op

    config = {"agentProfiles": {"limited": profile(provider="acme", limitResume=None)}}
    parked = launch(daemon, tmp_path / "parked", 600, config=config)
    resets_at = at_limit(daemon, parked)["resetsAt"]
    root = project_repo(tmp_path / "repo")
    task = task_op(daemon, action="add", title="After the limit", project=root)["task"]
    prepared = task_op(daemon, action="prepare", id=task["id"])["workspace"]
    start = {"kind": "shell", "cwd": prepared["path"], "command": [], "env": {}, "name": "worker",
             "sessionFile": "", "origin": "dispatch", "profile": "limited"}
    waiting = task_op(daemon, action="start", id=task["id"], launch=start)
    assert waiting.get("job") is None
    workspace = waiting["task"]["workspace"]
    clock = time.strftime("%H:%M", time.localtime(resets_at / 1000))
    assert workspace["stage"] == "working" and workspace["path"] == prepared["path"]
    assert workspace["note"] == f"waits for the acme usage limit's reset at {clock}: its agent starts then"
    assert workspace["startAfterLimit"]["at"] == resets_at
    assert [row["id"] for row in daemon.call("list")["jobs"]] == [parked]     # the parked one alone
    # A daemon started meanwhile still starts it at the reset.
    daemon.kill9()
    daemon.start()
    advance_to(daemon, resets_at + 60_000)

    def started():
        [current] = [item for item in task_op(daemon, action="list")["tasks"] if item["id"] == task["id"]]
        return current if (current.get("owner") or {}).get("name") == "worker" else None
    current = wait_for(started, timeout=20, what="the agent started after the reset")
    assert now_ms(daemon) >= resets_at
    assert current["workspace"]["stage"] == "working" and "startAfterLimit" not in current["workspace"]
    [worker] = [row for row in daemon.call("list")["jobs"] if row["name"] == "worker"]
    assert worker["cwd"] == prepared["path"] and worker["task"].startswith(f"#{task['id']} ")


def test_the_resume_waits_for_an_attached_persons_draft(daemon, tmp_path):
    from attachkit import Attacher

    job_id = launch(daemon, tmp_path, 600)
    resets_at = at_limit(daemon, job_id)["resetsAt"]
    attacher = Attacher(daemon, job_id)
    try:
        attacher.pump_until(lambda: b">" in attacher.output, what="the repaint")
        assert attacher.send(b"xyz\x7f\x7f\x7f")["taken"]      # typed, then erased by hand: still held
        wait_row(daemon, job_id, lambda current: current.get("held"), what="the row to say held")
        advance_to(daemon, resets_at + DUE_MS + 1000)
        stays(lambda: lines_typed(tmp_path) == [], 1.0, "nothing typed over the draft")
        attacher.client.call("detach", {"id": job_id})
        wait_for(lambda: lines_typed(tmp_path) == ["continue"], timeout=10, what="the resume after the detach")
    finally:
        attacher.close()
    stays(lambda: lines_typed(tmp_path) == ["continue"], 0.5, "typed once")


def test_a_schedule_that_tells_a_job_at_its_limit_is_skipped(daemon, tmp_path):
    job_id = launch(daemon, tmp_path, 3600, "in 1h", name="triage")
    resets_at = at_limit(daemon, job_id)["resetsAt"]
    daemon.call("schedule-add", name="morning", when="weekdays 09:00", target="triage", text="the inbox again")
    with daemon.client() as client:
        skipped = client.request("schedule-run", {"name": "morning"})
    clock = time.strftime("%H:%M", time.localtime(resets_at / 1000))
    assert skipped["code"] == "busy"
    assert skipped["error"] == f"its target triage is at its usage limit (it resets at {clock})"
    assert row(daemon, job_id)["queued"] == 0 and lines_typed(tmp_path) == []


MENU_TERM = dict(LIMIT_TERM, dialog=r"^  What do you want to do\?$",
                 question=r"^  (?P<question>What do you want to do\?)$",
                 choices=r"^  (?:❯ | {2})(?P<key>\d)\. (?P<label>\S.*)$")
MENU = {"choice": "Stop and wait for limit to reset", "keys": "1"}


def soon(daemon, seconds):
    """A reset text `seconds` from the daemon's now, as the fake prints its own."""
    return time.strftime("%H:%M:%S", time.localtime(now_ms(daemon) / 1000 + seconds))


def test_the_agents_own_limit_menu_is_left_by_its_waiting_choice_then_resumed_once(daemon, tmp_path):
    config = {"agentProfiles": {"limited": profile(term=MENU_TERM, limitMenu=MENU)}}
    job_id = launch(daemon, tmp_path, 600, soon(daemon, 600), "menu", config=config)
    current = at_limit(daemon, job_id)          # the menu answered: the limit screen, parked
    assert current["resetsAt"] is not None
    advance_to(daemon, current["resetsAt"] + DUE_MS)
    wait_for(lambda: lines_typed(tmp_path)[-1:] == ["continue"], timeout=15, what="the resume at the reset")
    assert lines_typed(tmp_path) == ["menu:1", "continue"]
    assert any("usage limit menu answered" in event["text"] for event in events(daemon, "limit"))


def test_a_limit_menu_is_left_alone_when_limit_resumes_are_off(daemon, tmp_path):
    config = {"agentProfiles": {"limited": profile(term=MENU_TERM, limitMenu=MENU, limitResume=None)}}
    job_id = launch(daemon, tmp_path, 600, soon(daemon, 600), "menu", config=config)
    current = wait_row(daemon, job_id, lambda row: row["waitingFor"] == "dialog", 10, what="the menu")
    assert current["choices"] == ["Stop and wait for limit to reset", "Upgrade your plan"]
    advance(daemon, 700_000)           # past the reset: still nothing
    stays(lambda: lines_typed(tmp_path) == [], 1.5, "nothing typed into the menu")
