"""A task's repository and worktree as git knows them, and the refusals when they are not
there: what every part of a workspace (preparing, verifying, merging, ...) asks first.
Functions of the task alone: nothing here holds state."""

import os

from roost import git
from roost.errors import bad_request


def repository(task):
    """The task's repository (its project), or bad_request."""
    if not task.get("project"):
        raise bad_request(f"task #{task['id']} is for any session: it has no repository to work in "
                          "(add it with a project)")
    repo = git.repository_of(task["project"])
    if repo is None:
        raise bad_request(f"task #{task['id']}'s project {task['project']} is no git repository any more")
    if repo.bare:
        raise bad_request(f"{repo.root} is a bare repository: it has no checked-out branch to start from")
    return repo


def checkout(task):
    """The task's worktree as its repository records it (roost.git.checkouts)."""
    return git.checkout_of(repository(task), task["workspace"]["path"])


def workspace(task, *stages):
    """The task's workspace, refused when it has none or (with `stages`) is not in one
    of them."""
    found = task.get("workspace")
    if not found or not found.get("stage"):
        raise bad_request(f"task #{task['id']} has no workspace: prepare and start it first")
    if stages and found["stage"] not in stages:
        raise bad_request(f"task #{task['id']} is {found['stage']}, not {' or '.join(stages)}")
    return found


def present(task):
    """The workspace, refused unless its worktree is there."""
    found = workspace(task)
    if found["stage"] in ("shelved", "merged") or not os.path.isdir(found.get("path") or ""):
        raise bad_request(f"task #{task['id']} is {found['stage']}: its worktree is not there")
    return found


def unverified(task):
    """None when the task's branch is at `workspace.verifiedTip` (the commit its verify
    passed on, or with no verify the one it was done at: what the person reviews), else
    why not, in words. Merge, the train and pr land only that commit."""
    found = task["workspace"]
    verified = found.get("verifiedTip")
    tip = git.ref_sha(repository(task), found["branch"])
    again = (f"verify it again (`roost task verify {task['id']}`) or send it back "
             f"(`roost task back {task['id']}`)")
    if not verified:
        return f"branch {found['branch']} has no verified tip on record: {again}"
    if tip != verified:
        return (f"branch {found['branch']} moved since it was verified and reviewed "
                f"({verified[:12]} -> {str(tip)[:12]}): {again}")
    return None
