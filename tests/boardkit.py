"""What the workspace tests share: a repository with a project.json, the task op on a
test daemon, a task's stage, and the messages roost left for a session."""

import json
import os

import pytest

from conftest import wait_for
from gitkit import commit_file, make_repo
from peerkit import book
from roost.client.connection import Refused
from roost.errors import RoostError


def task_op(daemon_or_client, **args):
    if hasattr(daemon_or_client, "home"):
        return daemon_or_client.call("task", **args)
    return daemon_or_client.call("task", args)


def refused(code, fn, *args, **kwargs):
    with pytest.raises((Refused, RoostError)) as caught:
        fn(*args, **kwargs)
    assert caught.value.code == code, caught.value
    return caught.value


def project_repo(path, verify=None, setup=None, max_rounds=None, files=None):
    """A repository on main; with `verify`/`setup`, a .roost/project.json naming them."""
    root = make_repo(str(path), files)
    project = {key: value for key, value in (("verify", verify), ("setup", setup), ("maxRounds", max_rounds))
               if value is not None}
    if project:
        commit_file(root, ".roost/project.json", json.dumps(project) + "\n", "the project's commands")
    return root


def find(daemon, task_id):
    return next(task for task in task_op(daemon, action="list")["tasks"] if task["id"] == task_id)


def stage(daemon, task_id):
    return (find(daemon, task_id).get("workspace") or {}).get("stage")


def wait_stage(daemon, task_id, *stages, timeout=20):
    return wait_for(lambda: stage(daemon, task_id) in stages and find(daemon, task_id), timeout=timeout,
                    what=f"task #{task_id} to be {' or '.join(stages)} (it is {stage(daemon, task_id)})")


def launch(cwd, name="worker", command=("sleep", "300"), **extra):
    return dict({"kind": "shell", "cwd": cwd, "command": list(command), "env": {}, "name": name,
                 "sessionFile": "", "origin": "dispatch"}, **extra)


def prepared_and_started(daemon, task_id, name="worker", subdir=""):
    workspace = task_op(daemon, action="prepare", id=task_id)["workspace"]
    started = task_op(daemon, action="start", id=task_id,
                      launch=launch(os.path.join(workspace["path"], subdir), name=name))
    return workspace, started["job"]["id"]


def notes_for(daemon, job_id):
    """The texts of the messages roost keeps for a job (its reply book)."""
    return [item["text"] for item in book(os.path.join(daemon.home, "jobs", job_id)) if item.get("kind") == "message"]


def was_told(daemon, job_id, words):
    """Whether a message holding `words` reached the job: waiting in its reply book (a
    `sleep` holder works on, issue 27: nothing is typed into it), or already typed into a
    holder that reads its terminal (what is typed there is echoed on its screen)."""
    return (any(words in text for text in notes_for(daemon, job_id))
            or words in daemon.call("peek", id=job_id)["text"])


def worktree_paths(root):
    from gitkit import git

    lines = git(root, "worktree", "list", "--porcelain").splitlines()
    return [os.path.realpath(line.split(" ", 1)[1]) for line in lines if line.startswith("worktree ")]
