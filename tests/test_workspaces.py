"""A task's own worktree against a real daemon and real repositories (M54-M60, M65): the
whole loop from prepare to merge with verify, review comments and back; a dirty tree
refused at done; a real conflict and its abort; shelve and start again; a start outside
the worktree; titles that would be commands; the callers refused per the spec."""

import json
import os

from boardkit import find, launch, notes_for, prepared_and_started, project_repo, refused, stage, task_op, wait_stage, was_told, worktree_paths
from conftest import wait_for
from gitkit import commit_file, git, isolated_git, read, sha, write  # noqa: F401
from peerkit import speaker


def approve(daemon, task_id):
    shown = task_op(daemon, action="approve", id=task_id, dry=True)
    return task_op(daemon, action="approve", id=task_id, hash=shown["hash"])


def test_the_whole_loop_prepare_start_commit_done_verify_review_back_and_merge(daemon, tmp_path):
    root = project_repo(tmp_path / "repo", verify="test -f ok.txt")
    task = task_op(daemon, action="add", title="Add the feature", project=root)["task"]
    shown = task_op(daemon, action="approve", id=task["id"], dry=True)
    assert "verify: test -f ok.txt" in shown["note"] and "not approved" in shown["note"]

    prepared = task_op(daemon, action="prepare", id=task["id"])["workspace"]
    assert prepared["branch"] == "roost/t1-add-the-feature" and prepared["baseRef"] == "main"
    assert prepared["baseSha"] == sha(root, "main") and "sourceDirty" not in prepared
    assert prepared["path"].startswith(os.path.realpath(daemon.home) + "/worktrees/")
    assert os.path.realpath(prepared["path"]) in worktree_paths(root)
    started = task_op(daemon, action="start", id=task["id"], launch=launch(prepared["path"]))
    worker = started["job"]["id"]
    assert started["task"]["state"] == "claimed" and started["task"]["owner"]["id"] == worker
    assert started["task"]["workspace"]["stage"] == "working"
    assert daemon.call("list")["jobs"][0]["task"] == "#1 Add the feature"

    write(os.path.join(prepared["path"], "feature.txt"), "the feature\n")
    with speaker(daemon, worker) as client:
        refused("bad_request", task_op, client, action="done", id=task["id"])      # uncommitted
    committed = task_op(daemon, action="commit", id=task["id"], message="The feature")
    assert committed["note"].startswith("committed ")
    assert task_op(daemon, action="commit", id=task["id"])["note"] == "nothing to commit"

    # not approved yet: done goes straight to review, and says why
    with speaker(daemon, worker) as client:
        done = task_op(client, action="done", id=task["id"], result="first try")["task"]
    assert done["workspace"]["stage"] == "review" and "approval" in done["workspace"]["note"]
    assert done["state"] == "claimed"
    task_op(daemon, action="back", id=task["id"], note="approve first")
    approve(daemon, task["id"])

    with speaker(daemon, worker) as client:
        task_op(client, action="done", id=task["id"])
    failed = wait_stage(daemon, task["id"], "working")
    assert "verify failed (exit 1)" in failed["workspace"]["note"]
    wait_for(lambda: was_told(daemon, worker, "the repository's verify failed"),
             what="the holder told of the failed verify")

    commit_file(prepared["path"], "ok.txt", "ok\n")
    with speaker(daemon, worker) as client:
        assert task_op(client, action="done", id=task["id"])["task"]["workspace"]["stage"] == "verifying"
    reviewed = wait_stage(daemon, task["id"], "review")
    assert reviewed["workspace"]["verify"]["exit"] == 0

    diff = task_op(daemon, action="diff", id=task["id"])["diff"]
    assert "+the feature" in diff["text"] and diff["branch"] == prepared["branch"]
    task_op(daemon, action="comment", id=task["id"],
            comment={"file": "feature.txt", "line": 1, "text": "say more", "lineText": "the feature"})
    second = task_op(daemon, action="comment", id=task["id"], comment={"file": "ok.txt", "line": 1, "text": "x"})
    withdrawn = second["task"]["workspace"]["comments"][1]
    task_op(daemon, action="uncomment", id=task["id"],
            comment={"file": "ok.txt", "line": 1, "at": withdrawn["at"]})
    back = task_op(daemon, action="back", id=task["id"], note="one more thing")
    assert back["task"]["workspace"]["stage"] == "working" and back["task"]["workspace"]["comments"] == []
    told = wait_for(lambda: [text for text in notes_for(daemon, worker) if "back with you" in text][-1:],
                    what="the holder told it is back")[0]
    assert "one more thing" in told and "feature.txt:1" in told and "say more" in told and "ok.txt" not in told

    commit_file(prepared["path"], "feature.txt", "the feature, said more\n")
    with speaker(daemon, worker) as client:
        task_op(client, action="done", id=task["id"])
    wait_stage(daemon, task["id"], "review")
    merged = task_op(daemon, action="merge", id=task["id"])
    assert merged["task"]["workspace"]["stage"] == "merged" and merged["task"]["state"] == "done"
    assert "merged into main" in merged["note"]
    assert read(os.path.join(root, "feature.txt")) == "the feature, said more\n"
    assert git(root, "status", "--porcelain") == ""
    wait_for(lambda: worktree_paths(root) == [os.path.realpath(root)] and
             git(root, "branch", "--list", "roost/*") == "", what="the merged worktree and branch removed")
    whys = [event["why"] for event in daemon.call("events", limit=1000)["events"] if event["kind"] == "task"]
    assert whys.count("stage") >= 8 and "prepare" in whys


def test_a_conflict_stops_the_merge_and_abort_gives_the_sync_up(daemon, tmp_path):
    root = project_repo(tmp_path / "repo")
    task = task_op(daemon, action="add", title="Change the app", project=root)["task"]
    workspace, worker = prepared_and_started(daemon, task["id"])
    commit_file(workspace["path"], "src/app.txt", "one\nTWO\nthree\n")
    with speaker(daemon, worker) as client:
        task_op(client, action="done", id=task["id"])
    base_before = commit_file(root, "src/app.txt", "one\n2\nthree\n", "base changes the same line")
    merged = task_op(daemon, action="merge", id=task["id"])
    assert merged["task"]["workspace"]["stage"] == "conflict" and "src/app.txt" in merged["note"]
    assert sha(root, "main") == base_before
    wait_for(lambda: was_told(daemon, worker, "stopped on conflicts"),
             what="the holder told of the conflict")
    refused("bad_request", task_op, daemon, action="merge", id=task["id"])     # resolve or abort first
    aborted = task_op(daemon, action="abort", id=task["id"])
    assert aborted["task"]["workspace"]["stage"] == "review"
    assert git(workspace["path"], "status", "--porcelain") == ""
    assert read(os.path.join(workspace["path"], "src/app.txt")) == "one\nTWO\nthree\n"


def test_shelve_keeps_the_branch_and_start_brings_it_back(daemon, tmp_path):
    root = project_repo(tmp_path / "repo")
    task = task_op(daemon, action="add", title="Shelve me", project=root)["task"]
    workspace, worker = prepared_and_started(daemon, task["id"])
    tip = commit_file(workspace["path"], "wip.txt", "half done\n")
    write(os.path.join(workspace["path"], "loose.txt"), "not committed\n")
    refused("bad_request", task_op, daemon, action="shelve", id=task["id"])       # dirty
    os.remove(os.path.join(workspace["path"], "loose.txt"))
    shelved = task_op(daemon, action="shelve", id=task["id"])["task"]
    assert shelved["workspace"]["stage"] == "shelved" and shelved["state"] == "open"
    assert not os.path.exists(workspace["path"]) and sha(root, workspace["branch"]) == tip
    assert worktree_paths(root) == [os.path.realpath(root)]
    assert task_op(daemon, action="list")["tasks"][0]["workspace"]["stage"] == "shelved"   # not merged by hand

    again = task_op(daemon, action="prepare", id=task["id"])["workspace"]
    assert again["branch"] == workspace["branch"] and read(os.path.join(again["path"], "wip.txt")) == "half done\n"
    restarted = task_op(daemon, action="start", id=task["id"], launch=launch(again["path"], name="second"))
    assert restarted["task"]["workspace"]["stage"] == "working"
    assert restarted["task"]["owner"]["name"] == "second"
    assert worker != restarted["job"]["id"]


def test_a_start_outside_the_worktree_is_refused_and_removes_what_was_prepared(daemon, tmp_path):
    root = project_repo(tmp_path / "repo")
    task = task_op(daemon, action="add", title="Elsewhere", project=root)["task"]
    refused("bad_request", task_op, daemon, action="start", id=task["id"], launch=launch(root))   # not prepared
    prepared = task_op(daemon, action="prepare", id=task["id"])["workspace"]
    refused("bad_request", task_op, daemon, action="start", id=task["id"], launch=launch(root))
    assert not os.path.exists(prepared["path"]) and worktree_paths(root) == [os.path.realpath(root)]
    assert git(root, "branch", "--list", "roost/*") == ""
    assert "prepared" not in find(daemon, task["id"]) and stage(daemon, task["id"]) is None


def test_a_prepared_worktree_not_started_is_removed_after_its_hold(daemon, tmp_path):
    with open(os.path.join(daemon.home, "roost.json"), "w") as handle:
        json.dump({"prepareHoldMs": 300}, handle)
    root = project_repo(tmp_path / "repo")
    write(os.path.join(root, "README"), "changed, not committed\n")
    task = task_op(daemon, action="add", title="Never started", project=root)["task"]
    prepared = task_op(daemon, action="prepare", id=task["id"])["workspace"]
    assert prepared["sourceDirty"] is True
    wait_for(lambda: not os.path.exists(prepared["path"]), what="the hold's end")
    wait_for(lambda: "prepared" not in find(daemon, task["id"]), what="the hold gone from the board")
    assert worktree_paths(root) == [os.path.realpath(root)] and git(root, "branch", "--list", "roost/*") == ""


def test_titles_that_would_be_commands_give_valid_branches_and_run_nothing(daemon, tmp_path):
    root = project_repo(tmp_path / "repo")
    # /tmp is shared (other test runs, other processes): what is there already is left as it was.
    shared = {os.path.join("/tmp", name): _stat(os.path.join("/tmp", name)) for name in ("x", "y")}
    for number, title in enumerate(["$(touch x) and `touch y`", "; rm -rf / #", "it's \"quoted\"",
                                    "Ünïcödé — 日本語 ✓", "-- --force ..lock"], start=1):
        task = task_op(daemon, action="add", title=title, project=root)["task"]
        workspace = task_op(daemon, action="prepare", id=task["id"])["workspace"]
        assert workspace["branch"].startswith(f"roost/t{number}-")
        git(root, "check-ref-format", "--branch", workspace["branch"])
        started = task_op(daemon, action="start", id=task["id"], launch=launch(workspace["path"], name=f"w{number}"))
        commit_file(workspace["path"], f"f{number}.txt", "x\n")
        with speaker(daemon, started["job"]["id"]) as client:
            task_op(client, action="done", id=task["id"])
        assert task_op(daemon, action="merge", id=task["id"])["task"]["workspace"]["stage"] == "merged"
    wait_for(lambda: worktree_paths(root) == [os.path.realpath(root)], what="the merged worktrees removed")
    for directory in (root, daemon.home, str(tmp_path)):
        assert not os.path.exists(os.path.join(directory, "x")) and not os.path.exists(os.path.join(directory, "y"))
    assert {path: _stat(path) for path in shared} == shared
    assert os.path.isdir("/usr/bin")


def _stat(path):
    """(inode, modification time) of `path`, or None when there is none."""
    try:
        found = os.stat(path)
    except FileNotFoundError:
        return None
    return found.st_ino, found.st_mtime_ns


def test_callers_are_refused_per_the_spec(daemon, tmp_path):
    root = project_repo(tmp_path / "repo")
    task = task_op(daemon, action="add", title="t", project=root)["task"]
    worker = daemon.call("dispatch", kind="shell", cwd=root, command=["sleep", "300"], env={}, name="w",
                         sessionFile="", origin="dispatch")["id"]
    with speaker(daemon, worker) as client:
        for action in ("prepare", "start", "back", "merge", "abort", "commit", "approve", "verify", "pass",
                       "comment", "uncomment", "shelve", "cleanup", "pr"):
            refused("unsupported", task_op, client, action=action, id=task["id"])
        # issue 20: a session reads a task's diff of its project (the overlap radar sends it there)
        refused("bad_request", task_op, client, action="diff", id=task["id"])
    refused("bad_request", task_op, daemon, action="prepare", id=task_op(daemon, action="add", title="any")["task"]["id"])


def test_the_concierge_and_an_unregistered_agent_are_refused_per_the_spec():
    """The concierge's connection is not built yet: its rules are held to the spec's
    Callers lines in the one table."""
    from roost.ops import callers

    for action in ("prepare", "start", "back", "diff"):
        callers.check("task", callers.CONCIERGE, {"action": action})
    for action in ("cleanup", "merge", "abort", "commit", "approve", "verify", "pass", "comment", "uncomment",
                   "shelve", "pr"):
        refused("unsupported", callers.check, "task", callers.CONCIERGE, {"action": action})
        callers.check("task", callers.PERSON, {"action": action})
    for action in ("prepare", "merge", "list"):
        refused("unauthorized", callers.check, "task", callers.UNREGISTERED, {"action": action})
