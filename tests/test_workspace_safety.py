"""What roost's own git runs in a task's worktree take from it (issue 16): nothing. A
`.git` file the agent rewrote to point at a repository of its making (whose config has
`core.fsmonitor`, a program git runs on status) is refused, never followed, and the task
goes to `failed` saying why."""

import os
import subprocess

from boardkit import find, prepared_and_started, project_repo, refused, stage, task_op, wait_stage
from conftest import wait_for
from gitkit import commit_file, git, isolated_git, make_repo, sha, write  # noqa: F401
from peerkit import speaker


def approve(daemon, task_id):
    shown = task_op(daemon, action="approve", id=task_id, dry=True)
    return task_op(daemon, action="approve", id=task_id, hash=shown["hash"])


def planted_repository(path, marker):
    """A repository whose config runs a program (writing `marker`) on any status."""
    root = make_repo(str(path))
    monitor = os.path.join(root, "monitor.sh")
    write(monitor, f"#!/bin/sh\necho planted >> {marker}\nexit 1\n")
    os.chmod(monitor, 0o755)
    git(root, "config", "core.fsmonitor", monitor)
    return root


def test_a_planted_gitdir_with_fsmonitor_never_runs_and_the_task_fails(daemon, tmp_path):
    root = project_repo(tmp_path / "repo", verify="true")
    task = task_op(daemon, action="add", title="Plant a gitdir", project=root)["task"]
    approve(daemon, task["id"])
    workspace, worker = prepared_and_started(daemon, task["id"])
    commit_file(workspace["path"], "work.txt", "work\n")
    with speaker(daemon, worker) as client:
        task_op(client, action="done", id=task["id"])
    wait_stage(daemon, task["id"], "review")

    marker = tmp_path / "marker"
    planted = planted_repository(tmp_path / "planted", marker)
    dot_git = os.path.join(workspace["path"], ".git")
    with open(dot_git, "w") as handle:
        handle.write(f"gitdir: {planted}/.git\n")
    # the plant works on git as anyone would run it there: the hole is real
    subprocess.run(["git", "status", "--porcelain"], cwd=workspace["path"], capture_output=True, timeout=30)
    assert marker.exists()
    marker.unlink()

    task_op(daemon, action="list")
    assert "+work" in task_op(daemon, action="diff", id=task["id"])["diff"]["text"]      # base's objects only
    before = sha(root, "main")
    error = refused("conflict", task_op, daemon, action="merge", id=task["id"])
    assert ".git" in error.text and "roost made it" in error.text
    assert sha(root, "main") == before
    failed = wait_stage(daemon, task["id"], "failed")
    assert "refused" in failed["workspace"]["note"] and ".git no longer points" in failed["workspace"]["note"]
    refused("conflict", task_op, daemon, action="commit", id=task["id"])
    with speaker(daemon, worker) as client:
        refused("conflict", task_op, client, action="done", id=task["id"])
    refused("conflict", task_op, daemon, action="verify", id=task["id"])
    refused("bad_request", task_op, daemon, action="merge", id=task["id"])        # failed: no merge from there
    task_op(daemon, action="list")
    assert stage(daemon, task["id"]) == "failed"
    assert not marker.exists()


def test_a_gitdir_replaced_by_a_link_is_refused_at_done(daemon, tmp_path):
    root = project_repo(tmp_path / "repo")
    task = task_op(daemon, action="add", title="Link the gitdir", project=root)["task"]
    workspace, worker = prepared_and_started(daemon, task["id"])
    marker = tmp_path / "marker"
    planted = planted_repository(tmp_path / "planted", marker)
    dot_git = os.path.join(workspace["path"], ".git")
    os.remove(dot_git)
    os.symlink(os.path.join(planted, ".git"), dot_git)
    with speaker(daemon, worker) as client:
        error = refused("conflict", task_op, client, action="done", id=task["id"])
    assert "a link" in error.text
    wait_for(lambda: stage(daemon, task["id"]) == "failed", what="the task to fail")
    assert not marker.exists()


def test_the_train_fails_a_tampered_task_and_lands_nothing(daemon, tmp_path):
    root = project_repo(tmp_path / "repo")
    task = task_op(daemon, action="add", title="Tampered in a train", project=root)["task"]
    workspace, worker = prepared_and_started(daemon, task["id"])
    commit_file(workspace["path"], "work.txt", "work\n")
    with speaker(daemon, worker) as client:
        task_op(client, action="done", id=task["id"])
    marker = tmp_path / "marker"
    planted = planted_repository(tmp_path / "planted", marker)
    with open(os.path.join(workspace["path"], ".git"), "w") as handle:
        handle.write(f"gitdir: {planted}/.git\n")
    before = sha(root, "main")
    train = task_op(daemon, action="merge", id=task["id"], train=[task["id"]])
    assert "not merged" in train["note"] and "no longer points" in train["note"]
    assert stage(daemon, task["id"]) == "failed" and sha(root, "main") == before
    assert not marker.exists()


# -- a merge lands what was verified and reviewed -----------------------------------------

def test_a_branch_that_moved_after_review_is_not_landed(daemon, tmp_path):
    root = project_repo(tmp_path / "repo")
    task = task_op(daemon, action="add", title="Reviewed work", project=root)["task"]
    workspace, worker = prepared_and_started(daemon, task["id"])
    reviewed = commit_file(workspace["path"], "work.txt", "reviewed\n")
    with speaker(daemon, worker) as client:
        task_op(client, action="done", id=task["id"])
    assert find(daemon, task["id"])["workspace"]["verifiedTip"] == reviewed
    assert task_op(daemon, action="diff", id=task["id"])["diff"]["tip"] == reviewed
    slipped = commit_file(workspace["path"], "work.txt", "slipped in after the review\n")
    before = sha(root, "main")

    merged = task_op(daemon, action="merge", id=task["id"])
    assert merged["task"]["workspace"]["stage"] == "review" and "moved" in merged["note"]
    assert reviewed[:12] in merged["note"] and slipped[:12] in merged["note"]
    train = task_op(daemon, action="merge", id=task["id"], train=[task["id"]])
    assert "moved" in train["note"] and stage(daemon, task["id"]) == "review"
    refused("conflict", task_op, daemon, action="pr", id=task["id"], dry=True)
    assert sha(root, "main") == before

    # sent back and done again, the new tip is what is reviewed, and exactly it lands
    task_op(daemon, action="back", id=task["id"], note="look again")
    with speaker(daemon, worker) as client:
        task_op(client, action="done", id=task["id"])
    landed = task_op(daemon, action="merge", id=task["id"])
    assert landed["task"]["workspace"]["stage"] == "merged" and sha(root, "main") == slipped


def test_merge_lands_the_tip_verify_passed_and_verify_again_takes_a_moved_one(daemon, tmp_path):
    root = project_repo(tmp_path / "repo", verify="test -f ok.txt")
    task = task_op(daemon, action="add", title="Verified work", project=root)["task"]
    approve(daemon, task["id"])
    workspace, worker = prepared_and_started(daemon, task["id"])
    verified = commit_file(workspace["path"], "ok.txt", "ok\n")
    with speaker(daemon, worker) as client:
        task_op(client, action="done", id=task["id"])
    in_review = wait_stage(daemon, task["id"], "review")
    assert in_review["workspace"]["verifiedTip"] == verified == in_review["workspace"]["verify"]["tip"]
    moved = commit_file(workspace["path"], "more.txt", "unverified\n")
    merged = task_op(daemon, action="merge", id=task["id"])
    assert "moved" in merged["note"] and sha(root, "main") != moved
    task_op(daemon, action="verify", id=task["id"])
    assert wait_stage(daemon, task["id"], "review")["workspace"]["verifiedTip"] == moved
    assert task_op(daemon, action="merge", id=task["id"])["task"]["workspace"]["stage"] == "merged"
    assert sha(root, "main") == moved
