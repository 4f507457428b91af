"""The job commands as a person runs them: run, list, reply, pin, rename, stop, respawn,
rm; `--json` prints exactly the op's result; refusals exit 1, bad usage 2."""

import json
import os
import subprocess

from conftest import PYTHON, wait_for
from jobkit import agent, output, row, wait_row, write_config


def run_json(daemon, command, *argv, **kwargs):
    out = daemon.cli(command, "--json", *argv, **kwargs)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_run_list_stop_and_rm(daemon, tmp_path):
    started = run_json(daemon, "run", "--name", "my  sleeper", "--cwd", str(tmp_path), "sleep", "30")
    job_id = started["id"]
    assert started == {"id": job_id, "name": "my sleeper"}
    item = wait_row(daemon, job_id, lambda current: current["pid"])
    assert item["cwd"] == str(tmp_path)
    listed = run_json(daemon, "list")
    assert listed == daemon.call("list")
    text = daemon.cli("list").stdout.decode()
    assert job_id in text and "my sleeper" in text
    assert run_json(daemon, "stop", job_id[:5]) == {"id": job_id}
    assert row(daemon, job_id)["state"] == "stopped"
    assert run_json(daemon, "rm", "my sleeper") == {"id": job_id}
    assert daemon.call("list", all=True)["jobs"] == []
    refused = daemon.cli("stop", job_id)
    assert refused.returncode == 1 and b"not_found" in refused.stderr


def test_a_job_is_named_after_its_program_and_an_ambiguous_name_lists_its_jobs(daemon):
    first = run_json(daemon, "run", "--", "sh", "-c", 'read -p "Name? " n; echo "hello $n"')
    assert first["name"] == "sh"
    wait_row(daemon, first["id"], lambda current: current["status"] == "waiting")
    replied = daemon.cli("reply", "sh", "Ada")
    assert replied.returncode == 0, replied.stderr
    wait_for(lambda: "hello Ada" in output(daemon.home, first["id"]), what="the reply typed")
    assert run_json(daemon, "run", "/bin/sleep", "30")["name"] == "sleep"
    second = run_json(daemon, "run", "sh", "-c", "sleep 30")
    refused = daemon.cli("stop", "sh")
    assert refused.returncode == 1
    message = refused.stderr.decode()
    assert "2 jobs are named 'sh'" in message and first["id"] in message and second["id"] in message


def test_what_is_not_utf8_text_is_left_out_or_refused_with_a_clear_error(daemon):
    started = daemon.cli("run", "--json", "--", "sh", "-c", 'echo "good=$GOOD"', env={"GOOD": "yes", "BAD": b"\xff"})
    assert started.returncode == 0, started.stderr
    assert b"'BAD' is left out of the job's environment" in started.stderr
    job_id = json.loads(started.stdout)["id"]
    wait_for(lambda: "good=yes" in output(daemon.home, job_id), what="the job to run with the rest")
    refused = subprocess.run([PYTHON, "-m", "roost", "run", "--", "echo", b"\xff"], env=daemon.env,
                             capture_output=True, timeout=30)
    assert refused.returncode == 2 and b"not UTF-8 text" in refused.stderr


def test_run_takes_a_command_with_options_of_its_own(daemon):
    job_id = run_json(daemon, "run", "--", "sh", "-c", "echo from-sh; exit 3")["id"]
    wait_row(daemon, job_id, lambda current: current["state"] == "failed")
    assert "from-sh" in output(daemon.home, job_id)
    assert daemon.cli("run").returncode == 2
    # Without the `--`, roost's options end at the command's first word all the same.
    plain = run_json(daemon, "run", "--name", "plain", "sh", "-c", "echo no-dashes; exit 4")
    assert plain["name"] == "plain"
    wait_row(daemon, plain["id"], lambda current: current["state"] == "failed")
    assert "no-dashes" in output(daemon.home, plain["id"])
    missing = daemon.cli("run", "no-such-program-anywhere")
    assert missing.returncode == 1 and b"not found" in missing.stderr


def test_run_passes_this_environment_but_not_this_terminal(daemon, tmp_path):
    target = tmp_path / "seen"
    write_config(daemon.home, {"sandbox": {"write": [str(tmp_path)]}})     # outside the job's folder
    job_id = run_json(daemon, "run", "--", "sh", "-c", f"echo $CLI_ONLY $TERM > {target}",
                      env={"CLI_ONLY": "from-the-cli", "TERM": "weird-terminal"})["id"]
    wait_row(daemon, job_id, lambda current: current["state"] == "done")
    assert target.read_text().split() == ["from-the-cli", "xterm-256color"]


def test_run_a_profile_with_a_task_and_reply_to_it(daemon):
    write_config(daemon.home, {"agentProfiles": {"echoer": {"command": agent("prompt_echo.py", "0.1")}}})
    job_id = run_json(daemon, "run", "--profile", "echoer", "say", "hi")["id"]
    wait_for(lambda: "echo: say hi" in output(daemon.home, job_id), what="the task typed")
    wait_row(daemon, job_id, lambda current: current["status"] == "waiting")
    replied = daemon.cli("reply", job_id, "and", "again")
    assert replied.returncode == 0 and b"typed and submitted" in replied.stdout
    wait_for(lambda: "echo: and again" in output(daemon.home, job_id), what="the reply")


def test_pin_rename_and_respawn(daemon):
    job_id = run_json(daemon, "run", "--", "sh", "-c", "exit 0")["id"]
    wait_row(daemon, job_id, lambda current: current["state"] == "done")
    assert run_json(daemon, "pin", job_id) == {"id": job_id, "pinned": True}
    assert run_json(daemon, "pin", job_id, "--off") == {"id": job_id, "pinned": False}
    assert run_json(daemon, "rename", job_id, "a", "new", "name") == {"id": job_id, "name": "a new name"}
    assert run_json(daemon, "respawn", job_id) == {"results": [{"id": job_id, "started": True}]}
    running = daemon.cli("respawn", "--all")
    assert running.returncode == 0 and b"nothing to start" in running.stdout
    assert os.path.isdir(os.path.join(daemon.home, "jobs", job_id))
