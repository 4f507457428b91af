"""Jobs as rows: dispatch, the JobRow fields, list, resolve, rename, pin, reorder, rm,
request ids (M36), profiles, and the environment a job sees (issue 3 items 1, 2, 6)."""

import json
import os
import threading

import pytest

from conftest import PYTHON, DaemonProcess, wait_for
from jobkit import (ROW_FIELDS, job_token, agent, dispatch, job_record, output, row, wait_row,
                         wait_state, write_config)
from roost.client.connection import Refused


def refusal(daemon, op, **args):
    with pytest.raises(Refused) as caught:
        daemon.call(op, **args)
    return caught.value


def test_a_shell_job_is_done_or_failed_by_its_exit_status(daemon):
    done = dispatch(daemon, ["sh", "-c", "echo all good"])
    failed = dispatch(daemon, ["sh", "-c", "echo oops; exit 5"])
    killed = dispatch(daemon, ["sh", "-c", "kill -9 $$"])
    finished = wait_state(daemon, done, "done")
    assert finished["error"] is None and finished["summary"] == "all good"
    assert wait_state(daemon, failed, "failed")["error"] == "exited with status 5"
    assert wait_state(daemon, killed, "failed")["error"] == "killed by SIGKILL (9)"
    for item in (finished, row(daemon, failed)):
        assert item["pid"] is None and item["endedAt"] >= item["startedAt"]
        assert item["stateSince"] >= item["startedAt"] and item["status"] is None


def test_a_row_carries_every_field_the_spec_names(daemon):
    job_id = dispatch(daemon, ["sleep", "30"], name="  a   sleeper ", model="m1")
    item = wait_row(daemon, job_id, lambda current: current["pid"] is not None)
    assert set(ROW_FIELDS) <= set(item)
    assert item["name"] == "a sleeper" and item["model"] == "m1" and item["kind"] == "shell"
    assert item["profile"] == "shell" and item["queued"] == 0 and item["cwd"] == "/tmp"
    assert item["reaped"] is False and item["pinned"] is False and item["order"] is None
    assert item["choices"] == [] and item["state"] in ("working", "blocked")
    assert "capabilities" not in item       # absent until its agent says hello
    os.kill(item["pid"], 0)
    record = job_record(daemon.home, job_id)
    assert record["version"] == 1 and "token" not in record     # kept apart (issue 26)
    token = job_token(daemon.home, job_id)
    assert len(token) >= 40
    assert os.stat(os.path.join(daemon.home, "jobs", job_id, "job.json")).st_mode & 0o777 == 0o600
    assert os.stat(os.path.join(daemon.home, "private", f"{job_id}.json")).st_mode & 0o777 == 0o600
    assert os.stat(os.path.join(daemon.home, "private")).st_mode & 0o777 == 0o700
    assert token not in daemon.stderr_text()
    with open(os.path.join(daemon.home, "daemon.log")) as handle:
        assert token not in handle.read()


def test_dispatch_refuses_what_cannot_run(daemon):
    assert refusal(daemon, "dispatch", cwd="/tmp", command=["ls"], kind="pi").code == "unsupported"
    assert refusal(daemon, "dispatch", command=["ls"]).code == "bad_request"
    assert refusal(daemon, "dispatch", cwd="tmp", command=["ls"]).code == "bad_request"
    assert refusal(daemon, "dispatch", cwd="/nonexistent", command=["ls"]).code == "bad_request"
    assert refusal(daemon, "dispatch", cwd="/tmp", command=[]).code == "bad_request"
    missing = refusal(daemon, "dispatch", cwd="/tmp", command=["no-such-program-here"])
    assert missing.code == "bad_request" and "no-such-program-here" in missing.text
    unknown = refusal(daemon, "dispatch", cwd="/tmp", command=[], profile="nobody")
    assert unknown.code == "bad_request" and "nobody" in unknown.text
    assert refusal(daemon, "dispatch", cwd="/tmp", command=["ls"], requestId="bad id!").code == "bad_request"
    assert refusal(daemon, "dispatch", cwd="/tmp", command=["ls"], name="concierge").code == "bad_request"
    assert daemon.call("list", all=True)["jobs"] == []


def test_a_dispatch_resent_with_its_request_id_gets_the_same_job(daemon):
    first = daemon.call("dispatch", cwd="/tmp", command=["sleep", "30"], requestId="req-1:a.b_c")
    again = daemon.call("dispatch", cwd="/", command=["true"], name="other", requestId="req-1:a.b_c")
    assert again == first
    assert len(daemon.call("list", all=True)["jobs"]) == 1
    # Sent twice at once on two connections: still one job.
    answers = []
    threads = [threading.Thread(target=lambda: answers.append(
        daemon.call("dispatch", cwd="/tmp", command=["sleep", "30"], requestId="req-2")))
        for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(20)
    assert len(answers) == 2 and answers[0] == answers[1]
    assert len(daemon.call("list", all=True)["jobs"]) == 2
    # Kept across a restart of the daemon (job.json holds it).
    daemon.kill9()
    daemon.start()
    assert daemon.call("dispatch", cwd="/tmp", command=["true"], requestId="req-1:a.b_c") == first


def test_resolve_by_id_prefix_and_unique_name(daemon):
    one = dispatch(daemon, ["sleep", "30"], name="builder")
    two = dispatch(daemon, ["sleep", "30"], name="twin")
    three = dispatch(daemon, ["sleep", "30"], name="twin")
    assert daemon.call("resolve", query=one) == {"id": one}
    assert daemon.call("resolve", query=one[:6]) == {"id": one}
    assert daemon.call("resolve", query="builder") == {"id": one}
    assert refusal(daemon, "resolve", query="twin").code == "bad_request"
    assert refusal(daemon, "resolve", query="nothing-like-it").code == "not_found"
    assert daemon.call("stop", id="builder") == {"id": one}
    assert {two, three} <= {item["id"] for item in daemon.call("list")["jobs"]}


def test_rename_pin_and_reorder(daemon):
    a, b, c = (dispatch(daemon, ["sleep", "30"], name=name) for name in ("a", "b", "c"))
    renamed = daemon.call("rename", id=a, name="  the   first \n job " + "x" * 300)
    assert renamed["name"].startswith("the first job x") and len(renamed["name"]) == 200
    assert refusal(daemon, "rename", id=a, name="   ").code == "bad_request"
    assert daemon.call("pin", id=c, pinned=True) == {"id": c, "pinned": True}
    assert [item["id"] for item in daemon.call("list")["jobs"]] == [c, a, b]   # pinned first
    daemon.call("reorder", ids=[b, a], key="working")
    listed = {item["id"]: item for item in daemon.call("list")["jobs"]}
    assert (listed[b]["order"], listed[a]["order"]) == (0, 1)
    assert listed[a]["orderKey"] == listed[b]["orderKey"] == "working"
    assert [item["id"] for item in daemon.call("list")["jobs"]] == [c, b, a]
    # Moving one keeps the rest of its section in place.
    daemon.call("reorder", ids=[a], key="working")
    listed = {item["id"]: item for item in daemon.call("list")["jobs"]}
    assert (listed[b]["order"], listed[a]["order"]) == (0, 1)
    daemon.call("pin", id=c, pinned=False)
    assert row(daemon, c)["pinned"] is False
    assert refusal(daemon, "reorder", ids=["nope"], key="working").code == "not_found"


def test_list_shows_recent_ended_jobs_and_filters_by_directory(daemon, tmp_path):
    here = str(tmp_path)
    os.mkdir(os.path.join(here, "sub"))
    inside = dispatch(daemon, ["sleep", "30"], cwd=os.path.join(here, "sub"))
    outside = dispatch(daemon, ["sleep", "30"], cwd="/")
    old = dispatch(daemon, ["true"])
    wait_state(daemon, old, "done")
    assert [item["id"] for item in daemon.call("list", cwd=here)["jobs"]] == [inside]
    assert {inside, outside, old} == {item["id"] for item in daemon.call("list")["jobs"]}
    # A job that ended long ago is listed only with `all`.
    daemon.call("shutdown", keepWorkers=True)
    daemon.process.wait(15)
    path = os.path.join(daemon.home, "jobs", old, "job.json")
    record = job_record(daemon.home, old)
    record["endedAt"] -= 3 * 24 * 3600 * 1000
    record["futureField"] = {"kept": True}
    with open(path, "w") as handle:
        json.dump(record, handle)
    daemon.start()
    assert old not in {item["id"] for item in daemon.call("list")["jobs"]}
    assert old in {item["id"] for item in daemon.call("list", all=True)["jobs"]}
    daemon.call("pin", id=old, pinned=True)
    assert daemon.call("list")["jobs"][0]["id"] == old
    assert job_record(daemon.home, old)["futureField"] == {"kept": True}   # unknown fields kept


def test_rm_removes_a_job_and_its_directory_stopping_a_live_one(daemon):
    ended = dispatch(daemon, ["true"])
    live = dispatch(daemon, ["sleep", "30"])
    wait_state(daemon, ended, "done")
    pid = wait_row(daemon, live, lambda current: current["pid"])["pid"]
    assert daemon.call("rm", id=ended) == {"id": ended}
    assert daemon.call("rm", id=live) == {"id": live}
    assert not os.path.exists(os.path.join(daemon.home, "jobs", ended))
    assert not os.path.exists(os.path.join(daemon.home, "jobs", live))
    assert daemon.call("list", all=True)["jobs"] == []
    wait_for(lambda: not os.path.exists(f"/proc/{pid}") or open(f"/proc/{pid}/stat").read().split(") ")[1][0] == "Z",
             what="the removed job's process to end")
    assert refusal(daemon, "rm", id=ended).code == "not_found"


def test_a_profile_fills_the_command_and_puts_the_task_in_argv(daemon):
    write_config(daemon.home, {"agentProfiles": {
        # a program that ends its options at `--`, as the agents' own command lines do
        "argv-agent": {"command": ["sh", "-c", "[ \"$1\" = -- ] && shift; echo got: \"$1\"; sleep 30", "agent"],
                       "task": "argv", "resume": ["sh", "-c", "echo resumed; sleep 30"], "unknownKey": 1},
    }})
    job_id = daemon.call("dispatch", cwd="/tmp", command=[], profile="argv-agent", task="-x fix the bug\nnow")["id"]
    wait_for(lambda: "got: -x fix the bug\nnow" in output(daemon.home, job_id).replace("\r", ""),
             what="the task in the agent's argv")
    item = row(daemon, job_id)
    assert item["profile"] == "argv-agent" and item["task"] == "-x fix the bug now" and item["name"] == "argv-agent"
    launch = job_record(daemon.home, job_id)["launch"]
    assert launch["taskInArgv"] is True and launch["resumable"] is True
    assert launch["argv"][-2:] == ["--", "-x fix the bug\nnow"]        # after `--`: text, never an option
    assert launch["resumeCommand"] == ["sh", "-c", "echo resumed; sleep 30"]
    # A respawn reopens it with the profile's resume argv.
    daemon.call("stop", id=job_id)
    assert daemon.call("respawn", id=job_id) == {"results": [{"id": job_id, "started": True}]}
    wait_for(lambda: "resumed" in output(daemon.home, job_id), what="the resume command")


def test_a_profile_task_is_typed_once_the_agent_first_waits(daemon):
    write_config(daemon.home, {"agentProfiles": {
        "echoer": {"command": agent("prompt_echo.py", "0.1"), "task": "type"}}})
    job_id = daemon.call("dispatch", cwd="/tmp", command=[], profile="echoer", task="hello there")["id"]
    wait_for(lambda: "echo: hello there" in output(daemon.home, job_id), what="the task typed")
    assert output(daemon.home, job_id).count("echo: hello there") == 1
    wait_row(daemon, job_id, lambda current: current["queued"] == 0)


def test_a_job_sees_its_identity_the_users_environment_and_umask(home, tmp_path):
    environ_file = tmp_path / "env"
    # The daemon is started by a user whose umask is 027, from inside another job.
    previous = os.umask(0o027)
    try:
        daemon = DaemonProcess(home, {"ROOST_JOB_ID": "outer", "ROOST_JOB_TOKEN": "outer-token",
                                      "MY_SETTING": "from-the-user", "COLUMNS": "7"}).start()
    finally:
        os.umask(previous)
    try:
        job_id = dispatch(daemon, ["sh", "-c", f"env > {environ_file}; umask >> {environ_file}"],
                          env={"LAUNCH_ONLY": "yes"})
        wait_state(daemon, job_id, "done")
        lines = environ_file.read_text().splitlines()
        seen = dict(line.split("=", 1) for line in lines if "=" in line)
        token = job_token(home, job_id)
        job_dir = os.path.join(home, "jobs", job_id)
        assert seen["ROOST_JOB_ID"] == seen["PI_JOB_ID"] == job_id
        assert seen["ROOST_JOB_TOKEN"] == seen["PI_JOB_TOKEN"] == token
        assert seen["ROOST_SOCKET"] == seen["PI_DAEMON_SOCK"] == daemon.socket
        assert seen["ROOST_JOB_DIR"] == seen["PI_JOB_DIR"] == job_dir
        assert seen["MY_SETTING"] == "from-the-user" and seen["LAUNCH_ONLY"] == "yes"
        assert "COLUMNS" not in seen and seen["TERM"]
        assert lines[-1] == "0027"
    finally:
        daemon.stop()


def test_a_job_inherits_no_file_descriptor_of_roosts(daemon):
    # Only its terminal (0, 1, 2): nothing of the keeper's or the daemon's leaks into it.
    job_id = dispatch(daemon, [PYTHON, "-c", "import os; print('fds', ' '.join(sorted(os.listdir('/proc/self/fd'))))"])
    wait_state(daemon, job_id, "done")
    line = next(line for line in output(daemon.home, job_id).splitlines() if line.startswith("fds"))
    # The listing itself holds one more descriptor while it reads the directory.
    assert line.split()[1:] in (["0", "1", "2"], ["0", "1", "2", "3"])


def test_an_exec_failure_comes_back_as_a_clear_refusal_without_a_job(daemon, tmp_path):
    program = tmp_path / "not-a-program"
    program.write_bytes(b"\x7fELF but not really")
    program.chmod(0o755)
    refused = refusal(daemon, "dispatch", cwd="/tmp", command=[str(program)])
    assert refused.code == "bad_request" and "Exec format error" in refused.text
    assert daemon.call("list", all=True)["jobs"] == []


def _tick(row):
    """N of a `tick N` summary, or None."""
    words = (row["summary"] or "").split()
    return int(words[1]) if len(words) == 2 and words[0] == "tick" and words[1].isdigit() else None


def test_a_working_jobs_summary_follows_its_screen_without_a_write_each_time(daemon):
    job_id = dispatch(daemon, agent("works_a_while.py", 30, 0.05))
    first = wait_row(daemon, job_id, lambda current: _tick(current) is not None)
    # Ticks 20 a second, the row's line at most once a second: it moves on while it works.
    # (Before the first tick is on screen the line may be null: nothing to read yet.)
    later = wait_row(daemon, job_id, lambda current: current["state"] == "working"
                     and (_tick(current) or 0) > _tick(first) + 5)
    assert later["status"] == "busy"
    # The line is read off the screen: job.json keeps what a lasting change last wrote.
    assert job_record(daemon.home, job_id)["summary"] != later["summary"]
