"""A machine that restarts (issue 19 item 2): kill -9 of the keeper, the daemon and every
job at once, then a new daemon. A job of a resumable profile comes back with its cwd and
env and resumes its own conversation (its own session id, never another job's); a
launch with `restart: "always"` is started again with its own argv; the others fail
with "the machine restarted". Real daemon, keeper, ptys and processes."""

import json
import os

from conftest import PYTHON, wait_for
from jobkit import agent, dispatch, job_record, output, power_cut, row, wait_row, write_config

RESUMER = os.path.join(os.path.dirname(__file__), "agents", "resumes_session.py")
TERM = {"settleMs": 200, "waiting": r"^>"}


def resumable_profile(home, **extra):
    write_config(home, {"agentProfiles": {"keeps": dict({
        "command": [PYTHON, RESUMER, "--session-id", "{sessionId}"],
        "resume": [PYTHON, RESUMER, "--resume", "{sessionId}"], "task": "type", "term": TERM}, **extra)}})


def launch_kept(daemon, cwd, mark):
    return daemon.call("dispatch", kind="shell", cwd=str(cwd), command=[], env={"RESUME_MARK": mark},
                       name=f"kept-{mark}", sessionFile="", origin="dispatch", profile="keeps")["id"]


def test_after_a_power_cut_each_job_comes_back_as_it_was_launched(daemon, tmp_path):
    resumable_profile(daemon.home)
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    kept = [launch_kept(daemon, first, "one"), launch_kept(daemon, second, "two")]
    always = dispatch(daemon, agent("prompt_echo.py", "0.1"), term=TERM, restart="always", name="server")
    plain = dispatch(daemon, agent("prompt_echo.py", "0.1"), term=TERM, name="plain")
    for job_id in kept + [always, plain]:
        wait_row(daemon, job_id, lambda current: current["status"] == "waiting", what="each job's prompt")
    sessions = [job_record(daemon.home, job_id)["launch"]["sessionId"] for job_id in kept]
    assert sessions[0] != sessions[1]
    assert all(f"new session {session}" in output(daemon.home, job_id) for job_id, session in zip(kept, sessions))
    old_pids = {job_id: row(daemon, job_id)["pid"] for job_id in kept + [always, plain]}

    power_cut(daemon, kept + [always, plain])
    daemon.start()

    for job_id, session, cwd, mark in zip(kept, sessions, (first, second), ("one", "two")):
        current = wait_row(daemon, job_id, lambda current: current["status"] == "waiting"
                           and current["pid"] != old_pids[job_id], what="the job resumed", timeout=20)
        assert current["state"] == "blocked" and current["cwd"] == str(cwd)
        log = output(daemon.home, job_id)
        assert f"resumed session {session}" in log and f"cwd {cwd}" in log and f"mark {mark}" in log
        other = sessions[1 - kept.index(job_id)]
        assert f"resumed session {other}" not in log
    current = wait_row(daemon, always, lambda current: current["status"] == "waiting"
                       and current["pid"] != old_pids[always], what="the restart-always job back", timeout=20)
    assert job_record(daemon.home, always)["lastArgv"] == agent("prompt_echo.py", "0.1")
    ended = wait_row(daemon, plain, lambda current: current["state"] == "failed", what="the plain job failed")
    assert ended["error"] == "the machine restarted"
    assert daemon.call("peek", id=plain)["text"].endswith(">")     # its last screen is kept
    # The replies still reach the resumed conversation.
    assert daemon.call("reply", id=kept[0], text="after the restart")["delivered"]
    wait_for(lambda: "echo: after the restart" in output(daemon.home, kept[0]), what="the reply typed")


def test_auto_resume_off_fails_them_instead(daemon, tmp_path):
    resumable_profile(daemon.home, autoResume=False)
    job_id = launch_kept(daemon, tmp_path, "off")
    wait_row(daemon, job_id, lambda current: current["status"] == "waiting", what="the prompt")
    power_cut(daemon, [job_id])
    daemon.start()
    ended = wait_row(daemon, job_id, lambda current: current["state"] == "failed", what="the job failed")
    assert ended["error"] == "the machine restarted"
    assert "resumed session" not in output(daemon.home, job_id)


def test_roost_run_takes_restart_always(daemon, tmp_path):
    shown = daemon.cli("run", "--restart=always", "--json", *agent("prompt_echo.py", "0.1"),
                       env={"PWD": str(tmp_path)})
    assert shown.returncode == 0, shown.stderr
    job_id = json.loads(shown.stdout)["id"]
    assert job_record(daemon.home, job_id)["launch"]["restart"] == "always"
    refused = daemon.cli("run", "--restart=sometimes", *agent("prompt_echo.py"))
    assert refused.returncode == 1 and b"restart" in refused.stderr
