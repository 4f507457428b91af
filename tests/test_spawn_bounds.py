"""`spawn` bounded (issue 26 item 5): at most 16 running children per session and 64 per
spawn tree (`full`, at n and n+1), room again once one ends; and a tree's spawned jobs,
running or ended, removed (row and directory) with its root."""

import os

import pytest

from conftest import wait_for
from jobkit import dispatch, row, wait_state
from roost.client.connection import Refused
from roost.jobs.spawn_tree import MAX_CHILDREN, MAX_TREE
from peerkit import speaker


def spawn(client, name, command=("sleep", "300")):
    return client.call("spawn", {"launch": {"kind": "shell", "cwd": "/tmp", "command": list(command), "env": {},
                                            "name": name, "sessionFile": "", "origin": "bg"}})["id"]


def refused_full(client, name):
    with pytest.raises(Refused) as refused:
        spawn(client, name)
    assert refused.value.code == "full", refused.value
    return str(refused.value)


def test_a_session_spawns_16_running_children_and_a_tree_64(daemon):
    root = dispatch(daemon, ["sleep", "300"], name="root")
    with speaker(daemon, root) as client:
        children = [spawn(client, f"child{number}") for number in range(MAX_CHILDREN)]
        assert "at most 16" in refused_full(client, "one too many")
        daemon.call("stop", id=children[0])                 # one ends: room for one more
        wait_state(daemon, children[0], "stopped", "failed", "done")
        children[0] = spawn(client, "in its place")
        refused_full(client, "one too many again")
    spawned = MAX_CHILDREN
    for parent in children:
        with speaker(daemon, parent) as client:
            while spawned < MAX_TREE and sum(1 for item in daemon.call("list")["jobs"]
                                             if item.get("parentSession") == parent) < MAX_CHILDREN - 1:
                spawn(client, f"grandchild{spawned}")
                spawned += 1
        if spawned == MAX_TREE:
            break
    with speaker(daemon, children[-1]) as client:
        assert "at most 64" in refused_full(client, "one too many in the tree")
    # Another tree has room of its own.
    other = dispatch(daemon, ["sleep", "300"], name="other root")
    with speaker(daemon, other) as client:
        spawn(client, "another tree's child")


def test_a_tree_s_spawned_jobs_are_removed_with_its_root(daemon):
    root = dispatch(daemon, ["sleep", "300"], name="root")
    with speaker(daemon, root) as client:
        running = spawn(client, "running child")
        ended = spawn(client, "ended child", ("true",))
    with speaker(daemon, running) as client:
        grandchild = spawn(client, "grandchild")
    wait_state(daemon, ended, "done", "failed")
    stranger = dispatch(daemon, ["sleep", "300"], name="stranger")
    tree = (running, ended, grandchild)
    daemon.call("rm", id=running)                  # a child removed alone: the others stay
    assert row(daemon, grandchild) is not None and row(daemon, ended) is not None
    tree = (ended, grandchild)
    daemon.call("rm", id=root)
    # each row goes first, then its directory (removed off the daemon's loop)
    wait_for(lambda: all(row(daemon, job_id) is None and not os.path.exists(os.path.join(daemon.home, "jobs", job_id))
                         for job_id in (root, *tree)), timeout=30,
             what="the tree's jobs, rows and directories, removed with its root")
    assert row(daemon, stranger) is not None
