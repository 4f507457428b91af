"""The trust boundary (issue 16 item 1): who is the person is decided from the peer's
credentials. A job's processes (its shell tool, what it double-forks or puts in a
session of its own) are refused the person's ops over a raw socket and through the CLI;
a job launched as the person's own shell (`roost run --as-me`) is the person, and its
row says so. The test process itself, outside every job, stays the person."""

import json
import os

import pytest

from conftest import wait_for
from jobkit import job_token, agent, dispatch, row, wait_row, write_config

PERSONS_OPS = ("dispatch", "task approve", "task merge", "keys", "reply")


def probe(daemon, how, **extra):
    # Beside roost's home, not in it: a jailed job sees its own directory there, no more.
    out = os.path.join(os.path.dirname(daemon.home), f"probe-{how}.json")
    job_id = dispatch(daemon, agent("trust_probe.py", out, how), name=f"probe-{how}", **extra)

    def answered():
        if os.path.exists(out):
            with open(out) as handle:
                return json.load(handle)
        return None
    return job_id, wait_for(answered, timeout=60, what=f"the probe ({how}) to answer")


@pytest.mark.parametrize("how, jailed", [("here", True), ("double-fork", True), ("double-fork", False),
                                         ("setsid", True)])
def test_a_jobs_processes_are_refused_the_persons_ops(daemon, how, jailed):
    job_id, found = probe(daemon, how, **({} if jailed else {"sandbox": False}))
    assert row(daemon, job_id)["sandboxed"] is jailed
    if how == "double-fork" and jailed:
        assert found["ppid"] == 1        # its parent is gone: its jail's pid 1 took it (its own namespace)
    elif how == "double-fork":
        assert found["ppid"] != row(daemon, job_id)["pid"]    # its parent is gone: the keeper's now
        # The keeper, its subreaper, reaps it once it ends (no zombie left), and that
        # orphan's end is not taken for the job's.
        wait_for(lambda: not os.path.exists(f"/proc/{found['pid']}"), what="the orphan to be reaped")
        assert row(daemon, job_id)["state"] in ("working", "blocked")    # live: its screen says which
    if how == "setsid":
        assert found["sid"] == found["pid"]
    for name in PERSONS_OPS:
        raw = found["raw"][name]
        assert (raw["ok"], raw["code"]) == (False, "unauthorized"), (name, raw)
        # The refusal names the job it runs in (double-forked: by its session, or not at all).
        if how != "setsid":
            assert f"job {job_id}" in raw["error"], raw
        cli = found["cli"][name]
        assert cli["status"] == 1, (name, cli)
        assert "is the person's" in cli["stderr"] and job_id in cli["stderr"], cli
    # What anyone may read stays open to it.
    assert found["raw"]["list"]["ok"] is True
    assert found["cli"]["list"]["status"] == 0
    # Nothing it tried took effect: no job started in the person's name.
    names = [item["name"] for item in daemon.call("list", all=True)["jobs"]]
    assert "escaped" not in names and "escaped-cli" not in names


CONCIERGE_AND_SCHEDULES = ("concierge", "concierge-ask", "schedules", "schedule-add", "schedule-run",
                           "concierge-say", "concierge-reply", "concierge-act", "concierge-order")


def test_a_jobs_process_reaches_neither_the_concierge_nor_the_schedules_without_hello(daemon):
    job_id, found = probe(daemon, "here")
    for name in CONCIERGE_AND_SCHEDULES:
        raw = found["raw"][name]
        assert (raw["ok"], raw["code"]) == (False, "unauthorized"), (name, raw)
    for name in ("concierge", "schedules"):
        assert found["cli"][name]["status"] == 1, (name, found["cli"][name])
    assert daemon.call("schedules")["schedules"] == []


def test_the_persons_own_shell_is_the_person_and_its_row_says_so(daemon):
    job_id, found = probe(daemon, "here", person=True)
    assert row(daemon, job_id).get("person") is True
    assert found["raw"]["dispatch"]["ok"] is True, found["raw"]["dispatch"]
    assert found["raw"]["keys"]["ok"] is True, found["raw"]["keys"]
    # A task that does not exist is not found: the caller was let through.
    assert found["raw"]["task approve"]["code"] == "not_found", found["raw"]["task approve"]
    assert found["cli"]["dispatch"]["status"] == 0, found["cli"]["dispatch"]
    wait_for(lambda: {"escaped", "escaped-cli"} <= {item["name"] for item in daemon.call("list", all=True)["jobs"]},
             what="the jobs the person's shell started")
    # Its children are no person's shells: the default is never the person.
    for item in daemon.call("list", all=True)["jobs"]:
        if item["name"].startswith("escaped"):
            assert not item.get("person"), item


def test_roost_run_as_me_makes_the_persons_shell(daemon):
    done = daemon.cli("run", "--as-me", "--name", "mine", "--json", "--", "sleep", "300")
    assert done.returncode == 0, done.stderr
    job_id = json.loads(done.stdout)["id"]
    assert wait_row(daemon, job_id, lambda item: item["state"] == "working").get("person") is True
    plain = dispatch(daemon, ["sleep", "300"], name="plain")
    assert "person" not in row(daemon, plain)


def test_a_sessions_spawn_is_never_the_persons_shell(daemon):
    lead = dispatch(daemon, ["sleep", "300"], name="lead")
    token = job_token(daemon.home, lead)
    launch = {"kind": "shell", "cwd": "/tmp", "command": ["sleep", "300"], "env": {}, "name": "child",
              "sessionFile": "", "origin": "bg"}
    with daemon.client() as client:
        client.call("speak_for", {"id": lead, "token": token})
        refused = client.request("spawn", {"launch": dict(launch, person=True)})
        assert (refused["ok"], refused["code"]) == (False, "unauthorized"), refused
        child = client.call("spawn", {"launch": launch})["id"]
    assert "person" not in row(daemon, child)


def test_a_profiles_person_flag_counts_for_the_persons_dispatch_only(daemon):
    write_config(daemon.home, {"agentProfiles": {"mine": {"command": ["sleep", "300"], "person": True}}})
    mine = dispatch(daemon, [], profile="mine", name="mine")
    assert row(daemon, mine).get("person") is True
    lead = dispatch(daemon, ["sleep", "300"], name="lead")
    token = job_token(daemon.home, lead)
    with daemon.client() as client:
        client.call("speak_for", {"id": lead, "token": token})
        child = client.call("spawn", {"launch": {"kind": "shell", "cwd": "/tmp", "command": [], "profile": "mine",
                                                 "env": {}, "name": "child", "sessionFile": "", "origin": "bg"}})["id"]
    assert "person" not in row(daemon, child)
    # Its environment tells the CLI inside it not to refuse the person's ops itself.
    pid = wait_row(daemon, child, lambda item: item["pid"])["pid"]
    with open(f"/proc/{pid}/environ", "rb") as handle:
        assert b"ROOST_JOB_PERSON=" not in handle.read()
    pid = row(daemon, mine)["pid"]
    with open(f"/proc/{pid}/environ", "rb") as handle:
        assert b"\0ROOST_JOB_PERSON=1\0" in b"\0" + handle.read()


def test_the_cli_inside_a_job_says_so_before_it_sends(daemon):
    # Not a job's process at all: the CLI refuses from its environment alone, and says why.
    done = daemon.cli("keys", "nosuchjob", "Enter", env={"ROOST_JOB_ID": "nosuchjob", "ROOST_JOB_TOKEN": "x"})
    assert done.returncode == 1
    assert b"is the person's" in done.stderr and b"nosuchjob" in done.stderr


# What a job's process may do before it says who it is: read what anyone may, or say
# who it is. Everything else is refused to it (the table fails closed for it).
OPEN_INSIDE_A_JOB = {"ping", "hello", "status", "list", "resolve", "report", "ack", "peer_register",
                     "speak_for", "profiles", "task list"}


def test_the_callers_table_refuses_a_jobs_process_all_but_reading_and_saying_who_it_is():
    from roost.errors import RoostError
    from roost.ops.callers import ACTIONS, IN_JOB, REFUSED, check

    allowed = set()
    for op_name in REFUSED:
        for action in ACTIONS.get(op_name, {None: None}):
            name = f"{op_name} {action}" if action else op_name
            try:
                check(op_name, IN_JOB, {"action": action} if action else {})
            except RoostError as error:
                assert error.code in ("unauthorized", "unsupported"), (name, error.code)
                continue
            allowed.add(name)
    assert allowed == OPEN_INSIDE_A_JOB
