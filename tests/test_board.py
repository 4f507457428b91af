"""The shared task board against a real daemon (M47, M52): add, list, claim, done,
release, drop, assign; dependencies and the sessions told when they can claim; projects
by git repository; claims released when a session dies; the 200 kept; the counts pushed
to hubs; every change in the feed; callers refused per the spec."""

import json
import os
import subprocess

import pytest

from conftest import PYTHON, wait_for
from jobkit import dispatch, output, row
from peerkit import book, speaker
from roost.client.connection import Refused


def repo(path):
    os.makedirs(path, exist_ok=True)
    subprocess.run(["git", "init", "-q", "-b", "main", str(path)], check=True)
    return str(path)


def session(daemon, name, cwd="/tmp"):
    return dispatch(daemon, ["sleep", "300"], cwd=str(cwd), name=name)


def task_op(client_or_daemon, **args):
    if hasattr(client_or_daemon, "call") and not hasattr(client_or_daemon, "home"):
        return client_or_daemon.call("task", args)
    return client_or_daemon.call("task", **args)


def task_events(daemon):
    return [(event["why"], event["text"]) for event in daemon.call("events", limit=1000)["events"]
            if event["kind"] == "task"]


def refused(code, fn, *args, **kwargs):
    with pytest.raises(Refused) as caught:
        fn(*args, **kwargs)
    assert caught.value.code == code, caught.value
    return caught.value


def test_a_task_is_added_claimed_and_done_and_each_change_is_in_the_feed(daemon):
    added = task_op(daemon, action="add", title="  write the   docs ", detail="all of them")["task"]
    assert added["title"] == "write the docs" and added["state"] == "open" and added["project"] is None
    assert added["by"] == {"who": "user", "whoId": None}
    worker = session(daemon, "worker")
    with speaker(daemon, worker) as client:
        claimed = task_op(client, action="claim", id=added["id"])["task"]
        assert claimed["owner"] == {"id": worker, "name": "worker"} and claimed["state"] == "claimed"
        assert task_op(client, action="claim", id=str(added["id"]))["task"]["state"] == "claimed"   # its own again
        finished = task_op(client, action="done", id=added["id"], result="written")
    assert finished["task"]["state"] == "done" and finished["task"]["result"] == "written"
    assert [task["id"] for task in finished["tasks"]] == [added["id"]]
    wanted = [("add", "#1 write the docs"), ("claim", "#1 write the docs"), ("done", "#1 write the docs: written")]
    wait_for(lambda: task_events(daemon) == wanted, what="the three changes in the feed")
    with open(os.path.join(daemon.home, "tasks.json")) as handle:
        assert json.load(handle)["version"] == 2


def test_dependencies_hold_a_claim_and_the_waiting_session_is_told(daemon):
    first = task_op(daemon, action="add", title="design")["task"]
    second = task_op(daemon, action="add", title="build", after=[first["id"]])["task"]
    refused("bad_request", task_op, daemon, action="add", title="x", after=[99])
    waiter = session(daemon, "waiter")
    holder = session(daemon, "holder")
    with speaker(daemon, waiter) as client:
        refused("blocked", task_op, client, action="claim", id=second["id"])
    assert task_op(daemon, action="list")["tasks"][1]["waiting"] == [{"id": waiter, "name": "waiter"}]
    with speaker(daemon, holder) as client:
        task_op(client, action="claim", id=first["id"])
        task_op(client, action="done", id=first["id"])
    notes = wait_for(lambda: [item for item in book(os.path.join(daemon.home, "jobs", waiter))
                              if item.get("kind") == "message"] or
                     ("can be claimed" in output(daemon.home, waiter) and ["typed"]), what="the waiter told")
    assert notes
    wait_for(lambda: any(why == "open" for why, _ in task_events(daemon)), what="the task open in the feed")
    with speaker(daemon, waiter) as client:
        assert task_op(client, action="claim", id=second["id"])["task"]["state"] == "claimed"


def test_a_live_holders_claim_conflicts_and_a_stopped_ones_is_released(daemon):
    task = task_op(daemon, action="add", title="contested")["task"]
    first, second = session(daemon, "first"), session(daemon, "second")
    with speaker(daemon, first) as client:
        task_op(client, action="claim", id=task["id"])
    with speaker(daemon, second) as client:
        refused("conflict", task_op, client, action="claim", id=task["id"])
        refused("unsupported", task_op, client, action="done", id=task["id"])
        refused("unsupported", task_op, client, action="release", id=task["id"])
    daemon.call("stop", id=first)
    wait_for(lambda: task_op(daemon, action="list")["tasks"][0]["state"] == "open", what="the claim released")
    wait_for(lambda: any(why == "release" and "its session stopped" in text for why, text in task_events(daemon)),
             what="the release in the feed")
    with speaker(daemon, second) as client:
        assert task_op(client, action="claim", id=task["id"])["task"]["owner"]["name"] == "second"
    daemon.call("stop", id=second)
    daemon.call("rm", id=second)
    wait_for(lambda: task_op(daemon, action="list")["tasks"][0]["owner"] is None, what="released again")


def test_projects_keep_sessions_to_their_repositorys_tasks(daemon, tmp_path):
    alpha, beta = repo(tmp_path / "alpha"), repo(tmp_path / "beta")
    os.makedirs(os.path.join(alpha, "sub"))
    in_alpha = session(daemon, "in-alpha", os.path.join(alpha, "sub"))
    in_beta = session(daemon, "in-beta", beta)
    with speaker(daemon, in_alpha) as client:
        mine = task_op(client, action="add", title="alpha's")["task"]
    assert mine["project"] == alpha
    anyone = task_op(daemon, action="add", title="anyone's")["task"]
    betas = task_op(daemon, action="add", title="beta's", project=beta + "/")["task"]
    assert betas["project"] == beta
    refused("bad_request", task_op, daemon, action="add", title="x", project="relative/dir")
    refused("bad_request", task_op, daemon, action="list", project=str(tmp_path))
    assert [task["title"] for task in task_op(daemon, action="list", project=alpha)["tasks"]] == ["alpha's"]
    with speaker(daemon, in_beta) as client:
        assert [task["title"] for task in task_op(client, action="list")["tasks"]] == ["anyone's", "beta's"]
        refused("not_found", task_op, client, action="claim", id=mine["id"])
        assert task_op(client, action="claim", id=anyone["id"])["task"]["state"] == "claimed"


def test_drop_and_assign_are_a_persons_and_the_holder_is_told(daemon):
    task = task_op(daemon, action="add", title="hand me over")["task"]
    write_profile = {"agentProfiles": {"sleeper": {"command": ["sleep", "300"]}}}
    with open(os.path.join(daemon.home, "roost.json"), "w") as handle:
        json.dump(write_profile, handle)
    agent = daemon.call("dispatch", kind="shell", cwd="/tmp", command=[], env={}, name="agent", sessionFile="",
                        origin="dispatch", profile="sleeper")["id"]
    command = session(daemon, "a-command")
    refused("unsupported", task_op, daemon, action="assign", id=task["id"], to="a-command")
    refused("not_found", task_op, daemon, action="assign", id=task["id"], to="nobody")
    handed = task_op(daemon, action="assign", id=task["id"], to="agent")
    assert handed["sent"] in ("delivered", "queued") and handed["task"]["assigned"]["name"] == "agent"
    items = wait_for(lambda: [item for item in book(os.path.join(daemon.home, "jobs", agent))
                              if item.get("kind") == "message"] or None, what="the hand-over message")
    assert "Task #1 on the board is handed to you: hand me over" in items[0]["text"]
    with speaker(daemon, agent) as client:
        claimed = task_op(client, action="claim", id=task["id"])["task"]
        assert claimed["assigned"] is None
        refused("unsupported", task_op, client, action="drop", id=task["id"])
    assert task_op(daemon, action="drop", id=task["id"])["task"]["state"] == "dropped"
    refused("bad_request", task_op, daemon, action="drop", id=task["id"])
    assert row(daemon, command)["state"] != "stopped"


def test_the_board_keeps_200_done_and_dropped_going_first(daemon):
    with daemon.client() as client:
        for number in range(200):
            client.call("task", {"action": "add", "title": f"task {number}"})
        refused("full", client.call, "task", {"action": "add", "title": "one too many"})
        client.call("task", {"action": "drop", "id": 5})
        added = client.call("task", {"action": "add", "title": "in its place"})
    titles = [task["title"] for task in added["tasks"]]
    assert len(titles) == 200 and "task 4" not in titles and titles[-1] == "in its place"


def test_unknown_fields_are_kept_and_counts_are_pushed_to_hubs(daemon):
    task_op(daemon, action="add", title="kept")
    daemon.stop()
    path = os.path.join(daemon.home, "tasks.json")
    with open(path) as handle:
        data = json.load(handle)
    data["fromAnotherVersion"] = {"x": 1}
    data["tasks"][0]["custom"] = "mine"
    with open(path, "w") as handle:
        json.dump(data, handle)
    daemon.start()
    hub = daemon.client()
    hub.call("subscribe")
    task_op(daemon, action="add", title="second", after=[1])
    board = wait_for(lambda: (lambda message: message if message["event"] == "board" else None)(hub.next_event()),
                     what="the counts pushed")
    assert board == {"event": "board", "open": 1, "claimed": 0, "blocked": 1, "done": 0, "workspaces": 0,
                     "needsYou": 0}
    hub.close()
    with open(path) as handle:
        data = json.load(handle)
    assert data["fromAnotherVersion"] == {"x": 1} and data["tasks"][0]["custom"] == "mine"


def test_callers_are_refused_per_the_spec(daemon):
    task_op(daemon, action="add", title="t")
    refused("unsupported", task_op, daemon, action="claim", id=1)         # a person does not claim
    refused("bad_request", task_op, daemon, action="fly", id=1)
    refused("bad_request", task_op, daemon, action="prepare", id=1)       # a task for any session: no repository
    worker = session(daemon, "worker")
    with speaker(daemon, worker) as client:
        for action in ("drop", "assign", "cleanup", "merge", "approve"):
            refused("unsupported", task_op, client, action=action, id=1, to="x")
    with daemon.client() as client:
        client.call("hello", {"protocol": 1})
        refused("unauthorized", client.call, "task", {"action": "list"})


def test_inside_a_job_the_cli_acts_for_it(daemon, tmp_path):
    task = task_op(daemon, action="add", title="from the cli")["task"]
    script = tmp_path / "work.sh"
    script.write_text(f"{PYTHON} -m roost task claim {task['id']} > claimed.txt 2>&1\n"
                      f"{PYTHON} -m roost task done {task['id']} --result ok > done.txt 2>&1\n"
                      "echo finished\nread line\n")
    job_id = dispatch(daemon, ["sh", str(script)], cwd=str(tmp_path), name="cli-worker")
    wait_for(lambda: "finished" in output(daemon.home, job_id), what="the script")
    assert "#1 from the cli: claimed" in (tmp_path / "claimed.txt").read_text()
    final = task_op(daemon, action="list")["tasks"][0]
    assert final["state"] == "done" and final["owner"]["name"] == "cli-worker" and final["result"] == "ok"
    listed = daemon.cli("task", "list")
    assert b"#1" in listed.stdout and b"from the cli" in listed.stdout
