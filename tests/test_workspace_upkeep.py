"""Keeping the board and the repositories in agreement (M59, M60): cleanup (its dry run
leaves work in progress alone), a branch merged by hand, a pull request through a fake
`gh`; and the daemon killed with SIGKILL during a prepare and during a merge, at several
points: afterwards tasks.json and `git worktree list` agree, and base is at its old
commit or the new one, never a third."""

import json
import os
import stat

import pytest

from boardkit import find, launch, prepared_and_started, project_repo, refused, stage, task_op, worktree_paths
from conftest import DaemonProcess, PYTHON, wait_for
from gitkit import commit_file, git, isolated_git, read, sha, write  # noqa: F401
from peerkit import speaker
from roost.client.connection import Lost


def done(daemon, worker, task_id):
    with speaker(daemon, worker) as client:
        return task_op(client, action="done", id=task_id)["task"]


def test_cleanup_removes_what_is_left_behind_and_its_dry_run_leaves_work_in_progress_alone(daemon, tmp_path):
    root = project_repo(tmp_path / "repo", verify="true")
    titles = ["merged one", "dropped, clean", "dropped, with commits", "in progress, dirty"]
    ids = [task_op(daemon, action="add", title=title, project=root)["task"]["id"] for title in titles]
    shown = task_op(daemon, action="approve", id=ids[0], dry=True)
    task_op(daemon, action="approve", id=ids[0], hash=shown["hash"])
    spaces, workers = {}, {}
    for task_id in ids:
        spaces[task_id], workers[task_id] = prepared_and_started(daemon, task_id, name=f"w{task_id}")
    commit_file(spaces[ids[0]]["path"], "one.txt", "1\n")
    done(daemon, workers[ids[0]], ids[0])
    wait_for(lambda: stage(daemon, ids[0]) == "review", what="the verify")
    task_op(daemon, action="merge", id=ids[0])
    wait_for(lambda: not os.path.exists(spaces[ids[0]]["path"]), what="the merged worktree removed")
    commit_file(spaces[ids[2]]["path"], "unmerged.txt", "keep me\n")
    for task_id in (ids[1], ids[2]):
        daemon.call("stop", id=workers[task_id])
        task_op(daemon, action="drop", id=task_id)
    write(os.path.join(spaces[ids[3]]["path"], "draft.txt"), "uncommitted\n")
    before = sorted(worktree_paths(root))

    dry = task_op(daemon, action="cleanup", dry=True)["note"].splitlines()
    assert len(dry) == 2, dry
    assert dry[0].startswith(f"remove {spaces[ids[1]]['path']} ") and "dropped" in dry[0]
    assert dry[1].startswith("remove the verify log of task #1")
    assert sorted(worktree_paths(root)) == before

    done_note = task_op(daemon, action="cleanup")["note"].splitlines()
    assert done_note == dry
    assert not os.path.exists(spaces[ids[1]]["path"])
    assert read(os.path.join(spaces[ids[2]]["path"], "unmerged.txt")) == "keep me\n"
    assert read(os.path.join(spaces[ids[3]]["path"], "draft.txt")) == "uncommitted\n"
    assert not [job for job in daemon.call("list", all=True)["jobs"] if job["name"] == "verify #1"]
    assert task_op(daemon, action="cleanup", dry=True)["note"] == "nothing to clean up"


def test_a_branch_merged_by_hand_is_marked_merged_when_the_board_is_listed(daemon, tmp_path):
    root = project_repo(tmp_path / "repo")
    first = task_op(daemon, action="add", title="Merge me by hand", project=root)["task"]
    after = task_op(daemon, action="add", title="Waits on it", project=root, after=[first["id"]])["task"]
    workspace, worker = prepared_and_started(daemon, first["id"])
    commit_file(workspace["path"], "hand.txt", "by hand\n")
    done(daemon, worker, first["id"])
    assert find(daemon, first["id"])["workspace"]["stage"] == "review"     # not merged yet: listing changes nothing
    git(root, "merge", "--quiet", "--ff-only", workspace["branch"])
    listed = find(daemon, first["id"])
    assert listed["workspace"]["stage"] == "merged" and listed["state"] == "done"
    assert "by hand" in listed["workspace"]["note"]
    assert task_op(daemon, action="prepare", id=after["id"])["workspace"]["baseSha"] == sha(root, "main")


def fake_gh(directory):
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, "gh")
    with open(path, "w") as handle:
        handle.write(f"#!{PYTHON}\nimport json, os, sys\n"
                     f"json.dump({{'argv': sys.argv[1:], 'cwd': os.getcwd()}}, open({path + '.json'!r}, 'w'))\n"
                     "print('https://github.invalid/o/r/pull/1')\n")
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
    return path


@pytest.fixture
def gh_daemon(home, tmp_path):
    bin_dir = str(tmp_path / "bin")
    fake_gh(bin_dir)
    process = DaemonProcess(home, {"PATH": bin_dir + os.pathsep + os.environ["PATH"]}).start()
    process.gh = os.path.join(bin_dir, "gh")
    yield process
    process.stop()


def test_a_pull_request_is_pushed_and_opened_with_the_tip_the_dry_run_showed(gh_daemon, tmp_path):
    daemon = gh_daemon
    root = project_repo(tmp_path / "repo")
    remote = str(tmp_path / "remote.git")
    git(str(tmp_path), "init", "--quiet", "--bare", remote)
    git(root, "remote", "add", "origin", remote)
    task = task_op(daemon, action="add", title="Open a PR; $(touch x)", detail="why it matters", project=root)["task"]
    workspace, worker = prepared_and_started(daemon, task["id"])
    tip = commit_file(workspace["path"], "pr.txt", "pr\n")
    refused("bad_request", task_op, daemon, action="pr", id=task["id"], dry=True)     # working, not review
    done(daemon, worker, task["id"])
    dry = task_op(daemon, action="pr", id=task["id"], dry=True)
    assert dry["hash"] == tip and "would push" in dry["note"] and not os.path.exists(daemon.gh + ".json")
    refused("bad_request", task_op, daemon, action="pr", id=task["id"])
    refused("conflict", task_op, daemon, action="pr", id=task["id"], hash="0" * 40)
    opened = task_op(daemon, action="pr", id=task["id"], hash=tip)
    assert opened["task"]["workspace"]["pr"]["url"] == "https://github.invalid/o/r/pull/1"
    assert opened["task"]["workspace"]["stage"] == "review"
    assert git(remote, "rev-parse", f"refs/heads/{workspace['branch']}") == tip
    with open(daemon.gh + ".json") as handle:
        seen = json.load(handle)
    assert seen["cwd"] == root          # never the worktree: gh runs git where it starts
    assert seen["argv"][:4] == ["pr", "create", "--base=main", "--head=" + workspace["branch"]]
    assert seen["argv"][4] == "--title=Open a PR; $(touch x)" and "why it matters" in seen["argv"][5]
    assert not os.path.exists(os.path.join(workspace["path"], "x"))


# -- the daemon killed half-way --------------------------------------------------------

# The daemon, with every step of a prepare, a merge and a land made a point where it can
# be killed (ROOST_KILL_AT names the step); patched after gevent's patching, as ever.
KILLABLE = """
import os, signal, sys
from roost.daemon import patching
original = patching.patch
def patch():
    original()
    from roost.board import merging, preparing
    from roost.git import landing
    def reached(step):
        if step == os.environ.get("ROOST_KILL_AT"):
            os.kill(os.getpid(), signal.SIGKILL)
    for module in (merging, preparing, landing):
        module._reached = reached
patching.patch = patch
from roost.daemon.main import main
sys.exit(main([]))
"""


class KillableDaemon(DaemonProcess):
    code = KILLABLE


def killed_during(daemon, **args):
    with pytest.raises((Lost, OSError)):
        task_op(daemon, **args)
    daemon.process.wait(10)
    assert daemon.process.returncode == -9


def roost_worktrees(daemon, root):
    """The worktrees of `root` that the board names, and the ones git lists under roost's own."""
    named = set()
    for task in json.load(open(os.path.join(daemon.home, "tasks.json")))["tasks"]:
        workspace = task.get("workspace") or {}
        if workspace.get("stage") not in (None, "shelved", "merged"):
            named.add(os.path.realpath(workspace["path"]))
        if task.get("prepared"):
            named.add(os.path.realpath(task["prepared"]["path"]))
    listed = {path for path in worktree_paths(root) if path != os.path.realpath(root)}
    return named, listed


@pytest.mark.parametrize("step", ["prepare_recorded", "prepare_added"])
def test_a_prepare_killed_half_way_is_undone_at_the_next_start(home, tmp_path, step):
    root = project_repo(tmp_path / "repo")
    daemon = KillableDaemon(home, {"ROOST_KILL_AT": step}).start()
    try:
        task = task_op(daemon, action="add", title="Killed while prepared", project=root)["task"]
        killed_during(daemon, action="prepare", id=task["id"])
        daemon.env.pop("ROOST_KILL_AT")
        daemon.start()
        named, listed = roost_worktrees(daemon, root)
        assert named == listed == set()
        assert git(root, "branch", "--list", "roost/*") == ""
        assert "prepared" not in find(daemon, task["id"])
        again = task_op(daemon, action="prepare", id=task["id"])["workspace"]     # and it can be made again
        assert os.path.isdir(again["path"])
    finally:
        daemon.stop()


@pytest.mark.parametrize("step", ["merge_recorded", "synced", "recorded", "checkout_updated", "ref_moved",
                                  "merged_saved"])
def test_a_merge_killed_half_way_leaves_base_old_or_new_and_the_board_agreeing(home, tmp_path, step):
    root = project_repo(tmp_path / "repo")
    daemon = KillableDaemon(home, {"ROOST_KILL_AT": step}).start()
    try:
        task = task_op(daemon, action="add", title="Killed while merged", project=root)["task"]
        workspace, worker = prepared_and_started(daemon, task["id"])
        commit_file(workspace["path"], "merged.txt", "merged\n")
        done(daemon, worker, task["id"])
        old = commit_file(root, "base.txt", "base moved on\n")      # the sync makes a merge commit
        killed_during(daemon, action="merge", id=task["id"])
        daemon.env.pop("ROOST_KILL_AT")
        daemon.start()
        now = sha(root, "main")
        tip = git(root, "rev-parse", "--verify", "--quiet", workspace["branch"], check=False)
        assert now == old or (tip == "" and os.path.exists(os.path.join(root, "merged.txt"))) or now == tip
        final = find(daemon, task["id"])
        if now == old:
            assert final["workspace"]["stage"] == "review" and final["state"] == "claimed"
            assert git(workspace["path"], "status", "--porcelain") == ""
        else:
            assert final["workspace"]["stage"] == "merged" and final["state"] == "done"
            assert read(os.path.join(root, "merged.txt")) == "merged\n"
        assert git(root, "status", "--porcelain") == ""
        named, listed = roost_worktrees(daemon, root)
        assert named == listed
        if final["workspace"]["stage"] == "review":
            assert task_op(daemon, action="merge", id=task["id"])["task"]["workspace"]["stage"] == "merged"
    finally:
        daemon.stop()


def test_the_hold_survives_a_restart_and_a_start_after_it_still_works(daemon, tmp_path):
    root = project_repo(tmp_path / "repo")
    task = task_op(daemon, action="add", title="Held across a restart", project=root)["task"]
    prepared = task_op(daemon, action="prepare", id=task["id"])["workspace"]
    daemon.kill9()
    daemon.start()
    assert find(daemon, task["id"])["prepared"]["path"] == prepared["path"]
    started = task_op(daemon, action="start", id=task["id"], launch=launch(prepared["path"]))
    assert started["task"]["workspace"]["stage"] == "working"
