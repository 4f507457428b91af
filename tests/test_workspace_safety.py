"""What roost's own git runs in a task's worktree take from it (issue 16): nothing. A
`.git` file the agent rewrote to point at a repository of its making (whose config has
`core.fsmonitor`, a program git runs on status) is refused, never followed, and the task
goes to `failed` saying why."""

import os
import subprocess

from boardkit import prepared_and_started, project_repo, refused, stage, task_op, wait_stage
from conftest import wait_for
from gitkit import commit_file, git, isolated_git, make_repo, sha, write  # noqa: F401
from test_peers import speaker


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
