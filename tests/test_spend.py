"""issue 29 items 1-3 on a real daemon: a job's row carries what its agent spent, read
from the agent's own records as it writes them (tests/agents/spends.py writes them as
Claude Code does); `roost usage` groups it; a job roost cannot read has `spend: null`."""

import json
import os

from clockkit import advance_to, clocked_daemon, now_ms  # noqa: F401 (a fixture)
from conftest import wait_for
from jobkit import agent, dispatch, job_record, row, wait_row, write_config
from spendkit import CODEX_ROLLOUT, TERM, homes_sandbox, profile, spend_of, start, waits

def test_a_jobs_row_carries_what_its_agent_wrote_it_spent(daemon, tmp_path):
    job_id = start(daemon, tmp_path / "w")
    waits(daemon, job_id)
    assert row(daemon, job_id)["spend"] is None          # nothing written yet: unknown, not 0
    daemon.call("reply", id=job_id, text="spend 100 30")
    spend = spend_of(daemon, job_id, 1100)
    assert spend["tokens"] == {"input": 1100, "output": 30, "cacheRead": 1000, "cacheWrite": 0}
    assert spend["models"] == ["claude-opus-4-8"] and spend["unpriced"] == [] and spend["source"] == "claude-code"
    assert spend["usd"] == round((100 * 5 + 30 * 25 + 1000 * 0.5) / 1e6, 6)
    daemon.call("reply", id=job_id, text="spend 10 5 fake-model")
    spend = spend_of(daemon, job_id, 2110)
    assert spend["usd"] is None and spend["unpriced"] == ["fake-model"]
    listed = daemon.cli("list").stdout.decode()
    assert "2.15k tok  spender" in listed.splitlines()[1]        # a model without a price: its tokens
    assert "spent today: 2.15k tok (no price for fake-model)" in listed
    # kept in the job's directory: a daemon started again shows it at once
    daemon.restart()
    assert row(daemon, job_id)["spend"]["tokens"]["input"] == 2110
    state = json.load(open(os.path.join(daemon.home, "jobs", job_id, "spend.json")))
    assert state["kind"] == "claude-code" and state["ledger"]["sessions"]


def test_a_job_roost_cannot_read_has_spend_null(daemon, tmp_path):
    job_id = dispatch(daemon, agent("prompt_echo.py"), cwd=str(tmp_path))
    wait_row(daemon, job_id, lambda current: current["status"] == "waiting", what="the prompt")
    assert row(daemon, job_id)["spend"] is None
    assert daemon.call("usage")["groups"] == []


def test_a_new_session_id_of_the_job_counts_as_its_own_and_usage_groups_it(daemon, tmp_path):
    job_id = start(daemon, tmp_path / "w", config={"prices": {"fake-model": {"input": 1, "output": 2}}})
    waits(daemon, job_id)
    daemon.call("reply", id=job_id, text="spend 100 30")
    spend_of(daemon, job_id, 1100)
    other = start(daemon, tmp_path / "v", config={"prices": {"fake-model": {"input": 1, "output": 2}}})
    waits(daemon, other)
    daemon.call("reply", id=other, text="spend 1000000 1000000 fake-model")
    spend = spend_of(daemon, other, 1_001_000)
    assert spend["usd"] == round((1_000_000 * 1 + 1_000_000 * 2 + 1000 * 1) / 1e6, 6)   # cache reads at input price
    by_job = daemon.call("usage", by="job")
    assert sorted(group["key"] for group in by_job["groups"]) == sorted([job_id, other])
    assert by_job["total"]["tokens"]["input"] == 1100 + 1_001_000
    by_model = json.loads(daemon.cli("usage", "--by", "model", "--since", "today", "--json").stdout)
    assert [group["key"] for group in by_model["groups"]] == ["claude-opus-4-8", "fake-model"]
    text = daemon.cli("usage", "--by", "provider").stdout.decode()
    assert "anthropic" in text and "total" in text
    assert "claude-opus-4-8" in daemon.cli("usage", "--prices").stdout.decode()


def test_a_tasks_spend_is_every_job_it_had_and_survives_their_removal(daemon, tmp_path):
    from boardkit import project_repo, task_op, wait_stage

    root = project_repo(tmp_path / "repo", verify="true")
    write_config(daemon.home, {"agentProfiles": {"spender": profile()}, "sandbox": homes_sandbox(daemon)})
    claude = os.path.join(os.path.dirname(daemon.home), "claude")
    task = task_op(daemon, action="add", title="Spend on it", project=root)["task"]
    jobs = []
    for turn, fresh in enumerate((100, 200)):
        workspace = task_op(daemon, action="prepare", id=task["id"])["workspace"]
        started = task_op(daemon, action="start", id=task["id"], launch={
            "kind": "shell", "cwd": workspace["path"], "command": [], "env": {"CLAUDE_CONFIG_DIR": claude},
            "name": f"try{turn}", "sessionFile": "", "origin": "dispatch", "profile": "spender", "task": "go"})
        job_id = started["job"]["id"]
        jobs.append(job_id)
        daemon.call("reply", id=job_id, text=f"spend {fresh} 10")
        spend_of(daemon, job_id, fresh + 1000)
        if turn == 0:
            task_op(daemon, action="shelve", id=task["id"])           # a retry: another job on it
    shown = task_op(daemon, action="approve", id=task["id"], dry=True)
    task_op(daemon, action="approve", id=task["id"], hash=shown["hash"])
    task_op(daemon, action="done", id=task["id"])
    wait_stage(daemon, task["id"], "review")                           # its verify ran as a job of its own
    listed = task_op(daemon, action="list")["tasks"][0]["spend"]
    assert listed["tokens"]["input"] == 1100 + 1200 and listed["tokens"]["output"] == 20
    assert sorted(listed["jobs"]) == sorted(jobs)
    assert "spent $" in daemon.cli("task", "list").stdout.decode()
    by_task = daemon.call("usage", by="task")
    assert by_task["groups"][0]["key"] == str(task["id"])
    # a job removed keeps its part of the task's spend
    daemon.call("stop", id=jobs[0])
    daemon.call("rm", id=jobs[0])
    after = task_op(daemon, action="list")["tasks"][0]["spend"]
    assert after["tokens"] == listed["tokens"] and sorted(after["jobs"]) == sorted(jobs)


def test_the_hub_shows_each_rows_spend_and_todays_total(daemon, tmp_path):
    import pytest
    from tmuxkit import TMUX, Tmux
    from conftest import PYTHON, ROOT

    if not os.path.exists(TMUX):
        pytest.skip("tmux is not installed")
    job_id = start(daemon, tmp_path / "w", name="spender")
    waits(daemon, job_id)
    quiet = dispatch(daemon, agent("prompt_echo.py"), cwd=str(tmp_path), name="quiet")
    terminal = Tmux(os.path.dirname(daemon.home), daemon.env)
    try:
        terminal.start([PYTHON, "-m", "roost", "hub"], 120, 30, env={"PYTHONPATH": ROOT, "TERM": "xterm-256color"})
        terminal.wait_screen(lambda text: "quiet" in text and "spender" in text, what="the rows")
        daemon.call("reply", id=job_id, text="spend 100 30")
        screen = terminal.wait_screen(lambda text: "today $0.0018" in text, what="today's total in the header")
        spender = next(line for line in screen.splitlines() if "spender" in line)
        assert "$0.002" in spender                       # pushed with the row, no polling
        assert "—" in next(line for line in screen.splitlines() if "quiet" in line)
    finally:
        terminal.stop()
    assert row(daemon, quiet)["spend"] is None


def test_codex_spend_and_its_plan_windows_as_its_rollout_says(daemon, tmp_path):
    codex_home = os.path.join(os.path.dirname(daemon.home), "codex")
    write_config(daemon.home, {"agentProfiles": {"coder": {
        "command": agent("spends.py", "--codex", "--session-id", "0a0b0c0d-0000-4000-8000-00000000000e"),
        "task": "type", "term": TERM, "provider": "openai", "spendFrom": "codex",
        "sessionFrom": {"openFile": CODEX_ROLLOUT}}}, "sandbox": homes_sandbox(daemon)})
    os.makedirs(tmp_path / "w")
    job_id = dispatch(daemon, [], cwd=str(tmp_path / "w"), profile="coder", env={"CODEX_HOME": codex_home})
    waits(daemon, job_id)
    daemon.call("reply", id=job_id, text="window 25 50")
    wait_row(daemon, job_id, lambda current: "windows set" in daemon.call("peek", id=job_id)["text"]
             and current["status"] == "waiting", what="the windows set")
    daemon.call("reply", id=job_id, text="spend 100 30")
    spend = spend_of(daemon, job_id, 1100)
    assert spend["tokens"] == {"input": 1100, "output": 30, "cacheRead": 1000, "cacheWrite": 0}   # once, not twice
    assert spend["models"] == ["gpt-5.5"] and spend["source"] == "codex"
    windows = wait_for(lambda: [entry for entry in daemon.call("windows")["windows"] if entry["provider"] == "openai"],
                       what="the openai windows")
    assert {entry["window"]: entry["usedPercent"] for entry in windows} == {"5h": 25.0, "7d": 50.0}
    assert all(entry["source"] == "codex" and entry["resetsAt"] > entry["at"] for entry in windows)
    shown = daemon.cli("usage", "--windows").stdout.decode()
    assert "openai" in shown and "25%" in shown and "50%" in shown


def test_claude_codes_status_line_records_its_windows_and_shows_the_users_own(daemon, tmp_path):
    job_id = start(daemon, tmp_path / "w")
    waits(daemon, job_id)
    claude = os.path.join(os.path.dirname(daemon.home), "claude")
    with open(os.path.join(claude, "settings.json"), "w") as handle:
        json.dump({"statusLine": {"type": "command", "command": "echo mine: $(cat | head -c 20)"}}, handle)
    daemon.call("reply", id=job_id, text="status 42 7")
    wait_for(lambda: 'status line: mine: {"session_id":' in daemon.call("peek", id=job_id)["text"],
             what="the user's own status line shown")
    windows = wait_for(lambda: [entry for entry in daemon.call("windows")["windows"]
                                if entry["provider"] == "anthropic"], what="the anthropic windows")
    assert {entry["window"]: entry["usedPercent"] for entry in windows} == {"5h": 42.0, "7d": 7.0}
    assert windows[0]["source"] == "claude-code status line"
    # kept across a restart (admission needs them)
    daemon.restart()
    assert {entry["window"] for entry in daemon.call("windows")["windows"]} == {"5h", "7d"}


def typed_lines(daemon, job_id):
    return daemon.call("peek", id=job_id)["text"]


def test_a_job_over_its_budget_is_parked_once_and_nothing_is_typed_until_allowed(daemon, tmp_path):
    # a response costs 200 tokens in, 1000 cache reads, 10 out: 1210 tokens as roost counts them
    job_id = start(daemon, tmp_path / "w", config={"budgets": {"job": {"tokens": 5000}}})
    waits(daemon, job_id)
    daemon.call("reply", id=job_id, text="loop 200 10")              # keeps spending until Esc
    parked = wait_row(daemon, job_id, lambda current: current["waitingFor"] == "budget", timeout=20,
                      what="the job parked at its budget")
    assert parked["state"] == "blocked" and parked["budgetHold"]["budget"] == "job"
    assert "the job budget of 5,000 tokens is spent" in parked["budgetHold"]["why"]
    # interrupted once (Esc, the profile's interrupt keys): it stopped spending
    wait_for(lambda: "interrupted after" in typed_lines(daemon, job_id), what="the agent interrupted")
    spent = row(daemon, job_id)["spend"]["tokens"]["input"]
    assert 5000 < spent <= 5000 + 3 * 1210
    # a reply is kept, not typed
    answer = daemon.call("reply", id=job_id, text="spend 1 1")
    assert answer == {"delivered": False, "saved": True}
    assert row(daemon, job_id)["queued"] == 1
    assert "budget" in daemon.cli("list").stdout.decode()
    assert job_id in daemon.cli("budget").stdout.decode()
    assert "parked at a budget (the job budget of 5,000 tokens is spent" in daemon.call("explain", id=job_id)["text"]
    events = daemon.call("events", limit=50)["events"]
    assert len([event for event in events if event.get("kind") == "budget"]) == 1
    # allowed: the hold lifts and the kept reply is typed
    allowed = daemon.cli("budget", "allow", job_id, "--json")
    assert allowed.returncode == 0 and json.loads(allowed.stdout)["wasHeld"] is True
    wait_for(lambda: "spent 1 1" in typed_lines(daemon, job_id), what="the kept reply typed after the allow")
    # The book counts the reply typed once the typing is done, a moment after its text shows.
    current = wait_row(daemon, job_id, lambda current: current["waitingFor"] != "budget" and current["queued"] == 0,
                       what="the row free, nothing queued")
    assert "budgetHold" not in current


def test_a_hold_at_the_days_budget_lifts_when_the_day_rolls_over(clocked_daemon, tmp_path):
    from roost.spend.budgets import next_day_ms

    daemon = clocked_daemon        # the user's day is the daemon's clock's: the test moves it on
    job_id = start(daemon, tmp_path / "w", config={"budgets": {"day": {"tokens": 5000}}})
    waits(daemon, job_id)
    daemon.call("reply", id=job_id, text="loop 200 10")
    parked = wait_row(daemon, job_id, lambda current: current["waitingFor"] == "budget", timeout=20,
                      what="the job parked at the day's budget")
    assert parked["budgetHold"]["budget"] == "day"
    wait_for(lambda: "interrupted after" in typed_lines(daemon, job_id), what="the agent interrupted")
    advance_to(daemon, next_day_ms(now_ms(daemon)))
    current = wait_row(daemon, job_id, lambda current: current["waitingFor"] != "budget", timeout=20,
                       what="the hold lifted at the day's roll-over")
    assert "budgetHold" not in current
    wait_for(lambda: [event["text"] for event in daemon.call("events", limit=50)["events"]
                      if event.get("kind") == "budget"][-1] == "the day rolled over: allowed again",
             what="the roll-over in the feed")


def test_a_protocol_agents_usage_reports_count_as_its_spend(daemon, tmp_path):
    write_config(daemon.home, {"agentProfiles": {"reporter": {
        "command": agent("proto_spender.py"), "protocol": True, "spendFrom": "report", "provider": "acme"}},
        "prices": {"fake-model": {"input": 1, "output": 2}}})
    job_id = dispatch(daemon, [], cwd=str(tmp_path), profile="reporter")
    wait_row(daemon, job_id, lambda current: current.get("summary") == "ready", what="its first report")
    assert row(daemon, job_id)["spend"] is None
    daemon.call("reply", id=job_id, text="spend 1000 10")
    daemon.call("reply", id=job_id, text="spend 500 5")
    spend = spend_of(daemon, job_id, 1500)
    assert spend["tokens"] == {"input": 1500, "output": 15, "cacheRead": 200, "cacheWrite": 0}
    assert spend["source"] == "report" and spend["usd"] == round((1300 * 1 + 15 * 2 + 200 * 1) / 1e6, 6)
    # a new session's figures start again from 0: added, not taken for a drop
    daemon.call("reply", id=job_id, text="new")
    daemon.call("reply", id=job_id, text="spend 40 4")
    assert spend_of(daemon, job_id, 1540)["tokens"]["output"] == 19


def test_several_machines_usage_adds_up():
    from roost.spend import usage

    one = {"groups": [{"key": "a1", "tokens": {"input": 10, "output": 1, "cacheRead": 0, "cacheWrite": 0},
                       "usd": 0.5, "unpriced": [], "jobs": ["a1"]}],
           "total": {"tokens": {"input": 10, "output": 1, "cacheRead": 0, "cacheWrite": 0}, "usd": 0.5,
                     "unpriced": []}}
    two = {"groups": [{"key": "a1", "tokens": {"input": 5, "output": 2, "cacheRead": 1, "cacheWrite": 0},
                       "usd": None, "unpriced": ["x"], "jobs": ["b2"]}],
           "total": {"tokens": {"input": 5, "output": 2, "cacheRead": 1, "cacheWrite": 0}, "usd": None,
                     "unpriced": ["x"]}}
    merged = usage.merge([one, two], "model")
    assert merged["groups"][0]["tokens"]["input"] == 15 and merged["groups"][0]["jobs"] == ["a1", "b2"]
    assert merged["total"]["usd"] is None and merged["total"]["unpriced"] == ["x"]


def test_budget_allow_takes_more_in_usd_or_tokens_and_refuses_what_is_not_an_amount(daemon, tmp_path):
    import pytest

    from roost.client.connection import Refused

    job_id = dispatch(daemon, agent("prompt_echo.py"), cwd=str(tmp_path))
    allowed = daemon.call("budget-allow", id=job_id, usd=2)
    assert allowed["wasHeld"] is False
    assert (allowed["allowed"]["unit"], allowed["allowed"]["more"]) == ("usd", 2)
    by_cli = json.loads(daemon.cli("budget", "allow", job_id, "--tokens", "500", "--json").stdout)
    assert (by_cli["allowed"]["unit"], by_cli["allowed"]["more"]) == ("tokens", 500)
    assert daemon.call("budget-allow", id=job_id)["allowed"]["all"] is True
    for wrong in ({"usd": -1}, {"usd": "2"}, {"tokens": True}):
        with pytest.raises(Refused) as refused:
            daemon.call("budget-allow", id=job_id, **wrong)
        assert refused.value.code == "bad_request" and next(iter(wrong)) in str(refused.value)
    with pytest.raises(Refused) as refused:
        daemon.call("budget-allow", id="no-such-job")
    assert refused.value.code == "not_found"
