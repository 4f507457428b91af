"""Schedules (M39, M40): the vocabulary's next times in the user's zone across a DST change
and a month end, and against a real daemon: the row, schedules.json, schedule-run, a
skip while the last run still goes, catchUp after the daemon was down, the one timer, a
schedule that tells a live session, autoResume after a kill -9, and who may call them."""

import datetime
import json
import os
import signal
import time
import zoneinfo

import pytest

from clockkit import advance_to, clocked_daemon, now_ms  # noqa: F401 (a fixture)
from conftest import DaemonProcess, wait_for
from jobkit import agent, alive, dispatch, edit_schedules, job_processes, output, row, wait_row, wait_state, write_config
from roost.errors import RoostError
from roost.schedule import when as clock

BERLIN = zoneinfo.ZoneInfo("Europe/Berlin")


def at(*parts):
    return int(datetime.datetime(*parts, tzinfo=BERLIN).timestamp() * 1000)


def local(ms):
    return datetime.datetime.fromtimestamp(ms / 1000, tz=BERLIN).strftime("%a %Y-%m-%d %H:%M %Z")


def following(when, start, count, anchor=None):
    rule = clock.parse(when, BERLIN)
    times, now = [], start
    for _ in range(count):
        now = rule.next_after(now, start if anchor is None else anchor)
        times.append(local(now))
    return times


# -- the vocabulary ---------------------------------------------------------------------

def test_daily_keeps_the_local_hour_across_the_spring_change_and_runs_a_skipped_time_after_it():
    assert following("daily 18:00", at(2026, 3, 28, 12, 0), 3) == [
        "Sat 2026-03-28 18:00 CET", "Sun 2026-03-29 18:00 CEST", "Mon 2026-03-30 18:00 CEST"]
    # 02:30 does not exist on 29 March in Berlin: it runs once, at the first minute after.
    assert following("daily 02:30", at(2026, 3, 28, 12, 0), 3) == [
        "Sun 2026-03-29 03:00 CEST", "Mon 2026-03-30 02:30 CEST", "Tue 2026-03-31 02:30 CEST"]


def test_daily_runs_a_repeated_time_once_in_the_autumn_change():
    assert following("daily 02:30", at(2026, 10, 24, 12, 0), 3) == [
        "Sun 2026-10-25 02:30 CEST", "Mon 2026-10-26 02:30 CET", "Tue 2026-10-27 02:30 CET"]


def test_weekdays_skip_the_weekend_across_a_month_end_and_the_autumn_change():
    assert following("weekdays 09:00", at(2026, 1, 30, 10, 0), 3) == [
        "Mon 2026-02-02 09:00 CET", "Tue 2026-02-03 09:00 CET", "Wed 2026-02-04 09:00 CET"]
    assert following("weekdays  09:00", at(2026, 10, 23, 10, 0), 2) == [
        "Mon 2026-10-26 09:00 CET", "Tue 2026-10-27 09:00 CET"]


def test_cron_on_the_31st_skips_the_short_months_and_follows_dst():
    assert following('cron "0 12 31 * *"', at(2026, 1, 31, 13, 0), 3) == [
        "Tue 2026-03-31 12:00 CEST", "Sun 2026-05-31 12:00 CEST", "Fri 2026-07-31 12:00 CEST"]
    # The last day of each month (cronsim's L), over February's end.
    assert following('cron "0 8 L * *"', at(2026, 1, 31, 9, 0), 2) == [
        "Sat 2026-02-28 08:00 CET", "Tue 2026-03-31 08:00 CEST"]


def test_every_is_a_fixed_interval_from_its_anchor_whatever_the_clock_says():
    # 30 minutes of real time: 01:45 CET is followed by 03:15 CEST on the spring change.
    start = at(2026, 3, 29, 1, 45)
    assert following("every 30m", start, 3) == [
        "Sun 2026-03-29 03:15 CEST", "Sun 2026-03-29 03:45 CEST", "Sun 2026-03-29 04:15 CEST"]
    # The slots are the anchor's: a look from mid-slot finds the next slot, not now + 2h.
    assert clock.parse("every 2h").next_after(start + 30 * 60_000, start) == start + 2 * 3_600_000
    assert clock.parse("every 1d").next_after(start, start) == start + 86_400_000


@pytest.mark.parametrize("when", ["hourly", "every 10s", "every 0m", "daily 24:00", "weekdays 9",
                                  'cron "61 * * * *"', 'cron "* * *"', 'cron "0 0 0 * *"', ""])
def test_what_the_vocabulary_does_not_say_is_refused(when):
    with pytest.raises(RoostError) as refused:
        clock.parse(when, BERLIN)
    assert refused.value.code == "bad_request"


def test_the_users_zone_is_tz(monkeypatch):
    monkeypatch.setenv("TZ", "Europe/Berlin")
    assert clock.local_zone().key == "Europe/Berlin"
    monkeypatch.setenv("TZ", "America/New_York")
    assert local(clock.parse("daily 18:00").next_after(at(2026, 3, 28, 12, 0))) == "Sat 2026-03-28 23:00 CET"


# -- against a daemon -------------------------------------------------------------------

def launch(command, name="", cwd="/tmp", **extra):
    return {"kind": "shell", "cwd": cwd, "command": command, "env": {}, "name": name, "sessionFile": "",
            "origin": "dispatch", **extra}


def schedule(daemon, name):
    return next(item for item in daemon.call("schedules")["schedules"] if item["name"] == name)


def schedule_events(daemon, name):
    return [event for event in daemon.call("events", limit=1000)["events"]
            if event["kind"] == "schedule" and event.get("schedule") == name]


@pytest.fixture
def berlin(home):
    process = DaemonProcess(home, {"TZ": "Europe/Berlin"}).start()
    yield process
    process.stop()


def test_a_schedule_row_is_the_specs_and_kept_across_a_restart(berlin):
    added = berlin.call("schedule-add", name="evening", when="daily  18:00", launch=launch(["true"]),
                        task="look around")
    assert set(added) >= {"name", "when", "task", "agent", "cwd", "model", "paused", "catchUp", "nextAt",
                          "lastRunAt", "lastJob", "lastSkip"}
    assert (added["when"], added["task"], added["agent"], added["cwd"], added["catchUp"]) == \
        ("daily 18:00", "look around", "shell", "/tmp", False)
    assert local(added["nextAt"]).split()[2] == "18:00"          # the user's zone, not the daemon's UTC
    assert added["nextAt"] > time.time() * 1000
    assert (added["lastRunAt"], added["lastJob"], added["lastSkip"]) == (None, None, None)
    paused = berlin.call("schedule-pause", name="evening", paused=True)
    assert (paused["paused"], paused["nextAt"]) == (True, None)
    berlin.restart()
    assert schedule(berlin, "evening")["paused"] is True
    assert berlin.call("schedule-pause", name="evening", paused=False)["nextAt"] == added["nextAt"]
    assert berlin.call("schedule-rm", name="evening") == {"name": "evening"}
    assert berlin.call("schedules") == {"schedules": []}
    with open(os.path.join(berlin.home, "schedules.json")) as handle:
        assert json.load(handle)["version"] == 1


def test_bad_schedules_are_refused_with_the_reason(daemon):
    daemon.call("schedule-add", name="a", when="every 30m", launch=launch(["true"]))
    cases = [({"name": "a", "when": "every 30m", "launch": launch(["true"])}, "exists"),
             ({"name": "b", "when": "hourly", "launch": launch(["true"])}, "hourly"),
             ({"name": "b", "when": "every 30m", "launch": launch(["no-such-program-here"])}, "not found"),
             ({"name": "b", "when": "every 30m"}, "launch"),
             ({"name": "b", "when": "every 30m", "target": "nobody", "text": "go"}, "no job")]
    with daemon.client() as client:
        for args, said in cases:
            answer = client.request("schedule-add", args)
            assert answer["ok"] is False and said in answer["error"], (args, answer)
        assert client.request("schedule-run", {"name": "nope"})["code"] == "not_found"
    assert [item["name"] for item in daemon.call("schedules")["schedules"]] == ["a"]


def test_schedule_run_starts_a_job_and_a_second_is_skipped_while_it_still_goes(daemon):
    daemon.call("schedule-add", name="nightly", when="daily 03:00",
                launch=launch(agent("prompt_echo.py", 0.1)), task="bump the deps")
    first = daemon.call("schedule-run", name="nightly")
    assert first["name"] == "nightly"
    job = wait_row(daemon, first["id"], lambda current: current["status"] == "waiting")
    assert (job["schedule"], job["name"], job["task"]) == ("nightly", "nightly", "bump the deps")
    wait_for(lambda: "echo: bump the deps" in output(daemon.home, first["id"]), what="the task typed")
    ran = schedule(daemon, "nightly")
    assert ran["lastJob"] == first["id"] and ran["lastRunAt"] and ran["lastSkip"] is None
    with daemon.client() as client:
        again = client.request("schedule-run", {"name": "nightly"})
    assert (again["ok"], again["code"]) == (False, "busy") and first["id"] in again["error"]
    skipped = schedule(daemon, "nightly")["lastSkip"]
    assert "still goes" in skipped["why"] and skipped["at"] >= ran["lastRunAt"]
    assert schedule(daemon, "nightly")["lastJob"] == first["id"]
    wait_for(lambda: len(schedule_events(daemon, "nightly")) == 2, what="a run and a skip in the feed")
    assert [event.get("skipped") is None for event in schedule_events(daemon, "nightly")] == [True, False]
    daemon.call("stop", id=first["id"])
    wait_state(daemon, first["id"], "stopped", "done", "failed")
    second = daemon.call("schedule-run", name="nightly")
    assert second["id"] != first["id"] and row(daemon, second["id"])["schedule"] == "nightly"


def test_catch_up_after_the_daemon_was_down_over_two_slots_runs_once(daemon):
    daemon.call("schedule-add", name="caught", when="every 1m", launch=launch(["true"]), catchUp=True)
    daemon.call("schedule-add", name="missed", when="every 1m", launch=launch(["true"]))
    daemon.stop()
    now = int(time.time() * 1000)

    def two_slots_ago(record):
        # As if the daemon had been down for 2.5 minutes: slots at -90 s and -30 s missed.
        record["createdAt"] = now - 150_000
        record["nextAt"] = now - 90_000
    edit_schedules(daemon.home, two_slots_ago)
    daemon.start()
    caught = wait_for(lambda: schedule(daemon, "caught")["lastJob"] and schedule(daemon, "caught"),
                      what="the missed run caught up")
    assert caught["nextAt"] == now - 150_000 + 3 * 60_000           # the next slot, past the missed ones
    missed = schedule(daemon, "missed")
    assert missed["lastJob"] is None and "missed" in missed["lastSkip"]["why"]
    assert missed["nextAt"] == caught["nextAt"]
    wait_for(lambda: schedule_events(daemon, "caught"), what="its run in the feed")
    jobs = [item for item in daemon.call("list", all=True)["jobs"] if item.get("schedule") == "caught"]
    assert [item["id"] for item in jobs] == [caught["lastJob"]]      # once, not once per slot
    assert len(schedule_events(daemon, "caught")) == 1


def test_the_timer_starts_a_run_when_its_time_comes(clocked_daemon):
    daemon = clocked_daemon
    daemon.call("schedule-add", name="soon", when="every 1m", launch=launch(["true"]))
    daemon.stop()
    due = now_ms(daemon) + 6000          # after the daemon's start: not a missed slot

    def soon(record):
        record["createdAt"] = due - 60_000
        record["nextAt"] = due
    edit_schedules(daemon.home, soon)
    daemon.start()
    assert schedule(daemon, "soon")["lastJob"] is None      # not yet: its time has not come
    advance_to(daemon, due)
    ran = wait_for(lambda: schedule(daemon, "soon")["lastJob"] and schedule(daemon, "soon"), timeout=30,
                   what="the due run")
    assert ran["lastSkip"] is None and ran["lastRunAt"] >= due and ran["nextAt"] == due + 60_000
    event = wait_for(lambda: schedule_events(daemon, "soon"), what="its event")[0]
    assert (event["due"], event["id"]) == (due, ran["lastJob"])


def test_a_target_schedule_tells_a_waiting_session_and_skips_one_that_is_gone(daemon):
    target = dispatch(daemon, agent("prompt_echo.py", 0.1), name="triage")
    wait_row(daemon, target, lambda current: current["status"] == "waiting")
    added = daemon.call("schedule-add", name="morning", when="weekdays 09:00", target="triage",
                        text="go through the inbox again")
    assert (added["target"], added["text"], added["agent"]) == (target, "go through the inbox again", "shell")
    assert daemon.call("schedule-run", name="morning") == {"name": "morning", "id": target}
    wait_for(lambda: "echo: go through the inbox again" in output(daemon.home, target), what="the text typed")
    event = wait_for(lambda: schedule_events(daemon, "morning"), what="its event")[0]
    assert event["who"] == "roost" and event["id"] == target
    daemon.call("rm", id=target)
    with daemon.client() as client:
        gone = client.request("schedule-run", {"name": "morning"})
    assert gone["code"] == "not_found" and "gone" in gone["error"]
    assert "gone" in schedule(daemon, "morning")["lastSkip"]["why"]


def test_a_resumable_run_cut_short_by_a_restart_carries_on_with_its_resume_argv(daemon):
    from jobkit import keeper_pid
    write_config(daemon.home, {"agentProfiles": {"ticker": {
        "command": agent("works_a_while.py", 60, 0.2), "resume": agent("prompt_echo.py", 0.1)}}})
    daemon.call("schedule-add", name="long", when="daily 04:00",
                launch=launch([], profile="ticker", cwd=os.path.dirname(daemon.home)))
    job_id = daemon.call("schedule-run", name="long")["id"]
    wait_for(lambda: "tick 2" in output(daemon.home, job_id), what="the run at work")
    # The machine goes down: the daemon, its keeper and the agent die at once.
    pids = job_processes(job_id)
    keeper = keeper_pid(daemon.home)
    daemon.kill9()
    for pid in [keeper] + pids:
        os.kill(pid, signal.SIGKILL)
    wait_for(lambda: not any(alive(pid) for pid in [keeper] + pids), what="everything gone")
    daemon.start()
    resumed = wait_row(daemon, job_id, lambda current: current["status"] == "waiting", timeout=20)
    assert resumed["schedule"] == "long" and resumed["state"] != "failed"
    assert "> " in output(daemon.home, job_id).rsplit("tick", 1)[-1]     # the resume argv's prompt
    # A whole machine's restart is the daemon's to recover (issue 19: every resumable job
    # comes back as itself); the schedule's own autoResume covers a run the recovery left.
    # Either way the run carries on once, and the feed says so.
    feed = daemon.call("events", limit=1000)["events"]
    said = [event for event in feed if "resumed" in event["text"]
            and (event.get("schedule") == "long" or event["kind"] == "daemon")]
    assert len(said) == 1, said


def test_a_session_cannot_see_or_change_the_schedules(daemon):
    from protokit import start
    from protokit import reported, token_of
    daemon.call("schedule-add", name="mine", when="every 30m", launch=launch(["true"]))
    job = start(daemon, "recorder")
    job.wait_row(reported, "the agent's first report")
    with daemon.client() as client:
        client.call("report", {"id": job.id, "token": token_of(daemon, job.id), "report": {"state": "working"}})
        for op, args in (("schedules", {}), ("schedule-run", {"name": "mine"}), ("schedule-rm", {"name": "mine"}),
                         ("schedule-pause", {"name": "mine", "paused": True}),
                         ("schedule-add", {"name": "theirs", "when": "every 1m", "launch": launch(["true"])})):
            answer = client.request(op, args)
            assert (answer["ok"], answer["code"]) == (False, "unsupported"), (op, answer)
    assert [(item["name"], item["paused"], item["lastJob"]) for item in daemon.call("schedules")["schedules"]] == \
        [("mine", False, None)]


def test_the_cli_adds_lists_pauses_resumes_runs_and_removes(daemon):
    def cli(*argv):
        # --json before a command's words, which end roost's options
        done = daemon.cli("schedule", *argv[:3], "--json", *argv[3:])
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    added = cli("add", "nightly", "cron 30 2 * * *", "--task", "bump", "--catch-up", "sh", "-c", "sleep 20")
    assert (added["when"], added["task"], added["catchUp"]) == ('cron "30 2 * * *"', "bump", True)
    assert cli("list") == daemon.call("schedules")
    assert cli("pause", "nightly")["paused"] is True
    assert cli("resume", "nightly")["paused"] is False
    ran = cli("run", "nightly")
    assert row(daemon, ran["id"])["schedule"] == "nightly"
    busy = daemon.cli("schedule", "run", "nightly")
    assert busy.returncode == 1 and b"busy" in busy.stderr
    told = cli("add", "poke", "every 2h", "--target", ran["id"], "--text", "again")
    assert (told["target"], told["text"]) == (ran["id"], "again")
    assert cli("rm", "nightly") == {"name": "nightly"}
    bad = daemon.cli("schedule", "add", "x", "hourly", "true")
    assert bad.returncode == 1 and b"bad_request" in bad.stderr
    daemon.call("stop", id=ran["id"])
