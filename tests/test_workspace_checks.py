"""The repository's own commands against a real daemon (M56): nothing runs before a
person approved it, a changed command needs a new approval, a failing verify sends the
task back to its holder and then to `failed`, `pass` and `verify` again, a setup before
the first session; and the merge train, which stops at the first task whose verify fails
on the new base while the ones before it stay landed."""

import os

from boardkit import launch, notes_for, prepared_and_started, project_repo, refused, task_op, wait_stage, was_told
from conftest import wait_for
from jobkit import write_config
from gitkit import commit_file, git, isolated_git, read, sha, write  # noqa: F401
from peerkit import speaker


def approve(daemon, task_id):
    shown = task_op(daemon, action="approve", id=task_id, dry=True)
    return task_op(daemon, action="approve", id=task_id, hash=shown["hash"])


def done(daemon, worker, task_id):
    with speaker(daemon, worker) as client:
        return task_op(client, action="done", id=task_id)["task"]


def test_a_failing_verify_goes_back_then_fails_and_a_person_passes_it(daemon, tmp_path):
    root = project_repo(tmp_path / "repo", verify="echo checking; echo the check failed >&2; exit 3", max_rounds=2)
    task = task_op(daemon, action="add", title="Never passes", project=root)["task"]
    approve(daemon, task["id"])
    workspace, worker = prepared_and_started(daemon, task["id"])
    commit_file(workspace["path"], "a.txt", "a\n")
    done(daemon, worker, task["id"])
    first = wait_stage(daemon, task["id"], "working")
    assert "exit 3" in first["workspace"]["note"] and first["workspace"]["verify"]["round"] == 1
    told = wait_for(lambda: [text for text in notes_for(daemon, worker) if "verify failed" in text],
                    what="the holder told")[0]
    assert "the check failed" in told
    verify_jobs = [job for job in daemon.call("list", all=True)["jobs"] if job["name"] == "verify #1"]
    assert verify_jobs and verify_jobs[0]["cwd"] == workspace["path"]
    done(daemon, worker, task["id"])
    failed = wait_stage(daemon, task["id"], "failed")
    assert "2 times in a row" in failed["workspace"]["note"]
    counts = None
    hub = daemon.client()
    hub.call("subscribe")
    task_op(daemon, action="verify", id=task["id"])
    while counts is None:
        message = hub.next_event()
        counts = message if message.get("event") == "board" else None
    hub.close()
    assert counts["workspaces"] == 1
    wait_stage(daemon, task["id"], "failed")
    passed = task_op(daemon, action="pass", id=task["id"])["task"]
    assert passed["workspace"]["stage"] == "review"


def test_nothing_runs_before_approval_and_a_changed_command_needs_a_new_one(daemon, tmp_path):
    root = project_repo(tmp_path / "repo", verify="touch ran.txt")
    task = task_op(daemon, action="add", title="Approve me", project=root)["task"]
    workspace, worker = prepared_and_started(daemon, task["id"])
    refused("bad_request", task_op, daemon, action="verify", id=task["id"])       # working, not review
    shown = task_op(daemon, action="approve", id=task["id"], dry=True)
    commit_file(root, ".roost/project.json", '{"verify": "touch other.txt"}\n', "a new verify")
    refused("bad_request", task_op, daemon, action="approve", id=task["id"], hash=shown["hash"])
    approve(daemon, task["id"])
    commit_file(root, ".roost/project.json", '{"verify": "touch third.txt"}\n', "another one")
    commit_file(workspace["path"], "w.txt", "w\n")
    reviewed = done(daemon, worker, task["id"])
    assert reviewed["workspace"]["stage"] == "review" and "approval" in reviewed["workspace"]["note"]
    assert not any(os.path.exists(os.path.join(workspace["path"], name))
                   for name in ("ran.txt", "other.txt", "third.txt"))
    refused("bad_request", task_op, daemon, action="verify", id=task["id"])       # not approved
    approve(daemon, task["id"])
    task_op(daemon, action="verify", id=task["id"])
    wait_stage(daemon, task["id"], "review")
    assert os.path.exists(os.path.join(workspace["path"], "third.txt"))


def test_an_approved_setup_runs_before_the_first_session(daemon, tmp_path):
    root = project_repo(tmp_path / "repo", setup="echo set up > .setup-done")
    git(root, "config", "--local", "core.excludesFile", os.devnull)
    with open(os.path.join(root, ".git", "info", "exclude"), "a") as handle:
        handle.write(".setup-done\n")
    task = task_op(daemon, action="add", title="Set me up", project=root)["task"]
    approve(daemon, task["id"])
    workspace = task_op(daemon, action="prepare", id=task["id"])["workspace"]
    started = task_op(daemon, action="start", id=task["id"], launch=launch(workspace["path"]))
    assert "job" not in started and started["task"]["workspace"]["stage"] == "working"
    settled = wait_for(lambda: (lambda task_: task_ if task_["state"] == "claimed" else None)(
        task_op(daemon, action="list")["tasks"][0]), what="the session started after the setup")
    assert settled["owner"]["name"] == "worker" and settled["workspace"]["setupDone"] is True
    assert read(os.path.join(workspace["path"], ".setup-done")) == "set up\n"
    names = [job["name"] for job in daemon.call("list", all=True)["jobs"]]
    assert "setup #1" in names and "worker" in names


def test_the_train_lands_in_order_and_stops_at_a_failing_verify(daemon, tmp_path):
    # verify passes unless the tree holds both b.txt and c.txt: c fails once b is in base
    root = project_repo(tmp_path / "repo", verify="! { test -f b.txt && test -f c.txt; }")
    ids, workers, spaces = [], {}, {}
    for name in ("a", "b", "c", "d"):
        task = task_op(daemon, action="add", title=f"Task {name}", project=root)["task"]
        ids.append(task["id"])
    approve(daemon, ids[0])
    for task_id, name in zip(ids, "abcd"):
        spaces[task_id], workers[task_id] = prepared_and_started(daemon, task_id, name=f"worker-{name}")
        commit_file(spaces[task_id]["path"], f"{name}.txt", f"{name}\n")
        done(daemon, workers[task_id], task_id)
    for task_id in ids:
        wait_stage(daemon, task_id, "review")
    before = sha(root, "main")
    refused("bad_request", task_op, daemon, action="merge", train=[ids[0], ids[0]])
    result = task_op(daemon, action="merge", train=ids[:3] + [ids[3]])
    order, *lines = result["note"].splitlines()
    assert order == "order: " + ", ".join(f"#{task_id}" for task_id in ids)      # nothing predicted to conflict
    assert lines[0].startswith(f"#{ids[0]}: merged") and lines[1].startswith(f"#{ids[1]}: merged")
    assert lines[2].startswith(f"#{ids[2]}: not merged: its verify failed") and "stopped at" in lines[3]
    stages = {task["id"]: task["workspace"]["stage"] for task in task_op(daemon, action="list")["tasks"]}
    assert stages == {ids[0]: "merged", ids[1]: "merged", ids[2]: "working", ids[3]: "review"}
    assert read(os.path.join(root, "a.txt")) == "a\n" and read(os.path.join(root, "b.txt")) == "b\n"
    assert not os.path.exists(os.path.join(root, "c.txt"))
    assert git(root, "rev-list", "--count", f"{before}..main") != "0"
    wait_for(lambda: was_told(daemon, workers[ids[2]], "verify failed"), what="c's holder told")


def test_at_most_two_verifies_run_in_a_repository_and_the_third_waits_its_turn(daemon, tmp_path):
    go = tmp_path / "go"
    # The verifies wait for a file outside their worktrees: their jails may read it.
    write_config(daemon.home, {"sandbox": {"read": [str(tmp_path)]}})
    root = project_repo(tmp_path / "repo", verify=f"while [ ! -f {go} ]; do sleep 0.05; done")
    ids, workers = [], {}
    for name in ("a", "b", "c"):
        task_id = task_op(daemon, action="add", title=f"Check {name}", project=root)["task"]["id"]
        if not ids:
            approve(daemon, task_id)
        workspace, workers[task_id] = prepared_and_started(daemon, task_id, name=f"w{name}")
        commit_file(workspace["path"], f"{name}.txt", f"{name}\n")
        ids.append(task_id)
    for task_id in ids:
        done(daemon, workers[task_id], task_id)
    tasks = {task["id"]: task for task in task_op(daemon, action="list")["tasks"]}
    assert [tasks[task_id]["workspace"]["stage"] for task_id in ids] == ["verifying"] * 3
    assert tasks[ids[2]]["workspace"]["note"].startswith("waiting: 2 verifies run")
    running = [job for job in daemon.call("list")["jobs"] if job["name"].startswith("verify #")]
    assert sorted(job["name"] for job in running) == [f"verify #{ids[0]}", f"verify #{ids[1]}"]
    go.write_text("")
    for task_id in ids:
        wait_stage(daemon, task_id, "review")
