"""issue 29 items 5 and 6 on a real daemon: the starts roost makes on its own (here a
schedule's) are not made past a budget (skipped, lastSkip says which), wait for a plan
window used past admitBelowPercent to reset, and queue past maxLive sessions of their
provider, starting in order as the others end."""

import os

from clockkit import advance_to, clocked_daemon, now_ms  # noqa: F401 (a fixture)
from conftest import wait_for
from jobkit import agent, dispatch, edit_schedules, row, write_config
from spendkit import CODEX_ROLLOUT, TERM, homes_sandbox, profile, spend_of, waits


def coder():
    return {"command": agent("spends.py", "--codex", "--session-id", "0a0b0c0d-0000-4000-8000-00000000000f"),
            "task": "type", "term": TERM, "provider": "openai", "spendFrom": "codex",
            "sessionFrom": {"openFile": CODEX_ROLLOUT}}


def configure(daemon, **config):
    write_config(daemon.home, dict({"agentProfiles": {"spender": profile(), "coder": coder()},
                                    "sandbox": homes_sandbox(daemon)}, **config))


def env(daemon):
    base = os.path.dirname(daemon.home)
    return {"CLAUDE_CONFIG_DIR": os.path.join(base, "claude"), "CODEX_HOME": os.path.join(base, "codex")}


def scheduled(daemon, tmp_path, name, profile_name="spender"):
    os.makedirs(tmp_path / name, exist_ok=True)
    daemon.call("schedule-add", name=name, when="every 1h", launch={
        "kind": "shell", "cwd": str(tmp_path / name), "command": [], "env": env(daemon), "name": "",
        "sessionFile": "", "origin": "dispatch", "profile": profile_name})


def listed(daemon, name):
    return next(item for item in daemon.call("schedules")["schedules"] if item["name"] == name)


def test_a_schedule_that_would_break_the_day_budget_is_skipped_and_says_so(daemon, tmp_path):
    configure(daemon, budgets={"day": {"tokens": 1000}})
    os.makedirs(tmp_path / "w")
    job_id = dispatch(daemon, [], cwd=str(tmp_path / "w"), profile="spender", env=env(daemon))
    waits(daemon, job_id)
    daemon.call("reply", id=job_id, text="spend 100 30")
    spend_of(daemon, job_id, 1100)
    scheduled(daemon, tmp_path, "nightly")
    refused = daemon.cli("schedule", "run", "nightly")
    assert refused.returncode == 1
    why = listed(daemon, "nightly")["lastSkip"]["why"]
    assert why == "not started: the day budget of 1,000 tokens is spent (1,130 tokens)"
    assert why in refused.stderr.decode()
    assert listed(daemon, "nightly")["lastJob"] is None


def test_a_window_at_95_percent_keeps_a_schedules_run_waiting_until_its_reset(clocked_daemon, tmp_path):
    daemon = clocked_daemon        # the window's reset comes when the test moves the clock there
    configure(daemon)
    os.makedirs(tmp_path / "w")
    job_id = dispatch(daemon, [], cwd=str(tmp_path / "w"), profile="coder", env=env(daemon))
    waits(daemon, job_id)
    daemon.call("reply", id=job_id, text="window 95 10 3600")
    wait_for(lambda: "windows set" in daemon.call("peek", id=job_id)["text"], what="the windows set")
    daemon.call("reply", id=job_id, text="spend 100 30")
    spend_of(daemon, job_id, 1100)
    window = wait_for(lambda: [entry for entry in daemon.call("windows")["windows"] if entry["window"] == "5h"],
                      what="the 5h window read")[0]
    assert window["usedPercent"] == 95.0
    daemon.call("stop", id=job_id)
    scheduled(daemon, tmp_path, "later", "coder")
    daemon.stop()
    due = now_ms(daemon) + 6000          # after the daemon's start: not a missed slot

    def soon(record):
        record["createdAt"] = due - 3_600_000
        record["nextAt"] = due
    edit_schedules(daemon.home, soon)
    daemon.start()
    advance_to(daemon, due)
    skipped = wait_for(lambda: listed(daemon, "later")["lastSkip"], timeout=20, what="the skip")
    assert skipped["why"].startswith("the openai 5h window is used at or above 90%: it resets at")
    assert listed(daemon, "later")["lastJob"] is None
    advance_to(daemon, window["resetsAt"])
    ran = wait_for(lambda: listed(daemon, "later")["lastJob"] and listed(daemon, "later"), timeout=20,
                   what="the run at the window's reset")
    assert ran["lastRunAt"] >= window["resetsAt"]


def test_max_live_queues_the_third_of_three_launches_until_one_ends(daemon, tmp_path):
    configure(daemon, maxLive={"anthropic": 2})
    for name in ("a", "b", "c"):
        scheduled(daemon, tmp_path, name)
    first = daemon.call("schedule-run", name="a")["id"]
    second = daemon.call("schedule-run", name="b")["id"]
    third = daemon.cli("schedule", "run", "c")
    assert third.returncode == 1
    assert "queued: 2 anthropic sessions run at once (maxLive)" in listed(daemon, "c")["lastSkip"]["why"]
    assert listed(daemon, "c")["lastJob"] is None
    # the person's own start is not held back, only told
    os.makedirs(tmp_path / "mine")
    mine = daemon.call("dispatch", kind="shell", cwd=str(tmp_path / "mine"), command=[], env=env(daemon), name="mine",
                       sessionFile="", origin="dispatch", profile="spender")
    assert "queued: 2 anthropic sessions run at once" in mine["notice"]
    daemon.call("stop", id=mine["id"])
    assert row(daemon, first)["state"] in ("working", "blocked") and row(daemon, second)["state"] in ("working", "blocked")
    daemon.call("stop", id=first)
    started = wait_for(lambda: listed(daemon, "c")["lastJob"], timeout=20, what="the queued run started")
    assert row(daemon, started)["schedule"] == "c"


def test_a_task_start_past_max_live_is_queued_and_starts_when_a_session_ends(daemon, tmp_path):
    from boardkit import project_repo, task_op

    configure(daemon, maxLive=1)
    os.makedirs(tmp_path / "w")
    running = dispatch(daemon, [], cwd=str(tmp_path / "w"), profile="spender", env=env(daemon))
    waits(daemon, running)
    root = project_repo(tmp_path / "repo")
    task = task_op(daemon, action="add", title="Queued work", project=root)["task"]
    workspace = task_op(daemon, action="prepare", id=task["id"])["workspace"]
    started = task_op(daemon, action="start", id=task["id"], launch={
        "kind": "shell", "cwd": workspace["path"], "command": [], "env": env(daemon), "name": "queued",
        "sessionFile": "", "origin": "dispatch", "profile": "spender", "task": "go"})
    assert started.get("job") is None
    shown = next(item for item in task_op(daemon, action="list")["tasks"] if item["id"] == task["id"])
    assert shown["workspace"]["note"].startswith("queued: 1 anthropic session run at once (maxLive)")
    daemon.call("stop", id=running)
    holder = wait_for(lambda: (next(item for item in task_op(daemon, action="list")["tasks"]
                                    if item["id"] == task["id"]).get("owner") or {}).get("name"),
                      timeout=20, what="the queued start")
    assert holder == "queued"
