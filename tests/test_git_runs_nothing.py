"""git on agent-written trees runs nothing configured (issue 26 item 4): with every
program a repository's config, attributes, hooks and a nested repository can name
planted (plantkit.py), roost.git's status, commit, diff, sync (merge), merge
prediction (merge-tree) and land (read-tree) run none of them, in a jail (bubblewrap)
and without one (a bwrap that cannot work: the settings alone). Each test first shows
the plants are live: the same git commands run by hand run them."""

import os

import pytest

from boardkit import launch, prepared_and_started, project_repo, task_op, wait_stage
from conftest import wait_for
from gitkit import commit_file, git, isolated_git, make_repo, place, read, sha, write  # noqa: F401
from plantkit import clear_markers, markers, plant_everything, touch_nested
from roost import git as roost_git
from roost.git import command, jail
from roost.git.errors import GitError
from peerkit import speaker


@pytest.fixture(params=["jailed", "settings alone"])
def jails(request, tmp_path, monkeypatch):
    """The jail as the daemon sets it, or a bwrap that cannot make one (as where user
    namespaces are refused): git must run nothing configured either way."""
    if request.param == "settings alone":
        shims = tmp_path / "shims"
        shims.mkdir()
        write(str(shims / "bwrap"), "#!/bin/sh\necho 'bwrap: user namespaces are not allowed' >&2\nexit 1\n")
        os.chmod(shims / "bwrap", 0o755)
        monkeypatch.setenv("PATH", f"{shims}:{os.environ['PATH']}")
    monkeypatch.setattr(command, "_jails", jail.Jails())
    yield request.param
    assert (command._jails.works is not False) == (request.param == "jailed"), command._jails.why_not


def planted(tmp_path):
    """A repository whose task worktree holds every plant, base and branch having changed
    the same file in different places (a merge must merge its content)."""
    root = make_repo(str(tmp_path / "repo"), {"README": "a repository\n", "shared.txt": "".join(
        f"line {number}\n" for number in range(1, 21))})
    repo = roost_git.repository_of(root)
    tree = roost_git.add_worktree(repo, str(tmp_path / "wt"), roost_git.task_branch(repo, 1, "planted"), "main")
    at = place(repo, tree)
    commit_file(repo.root, "shared.txt", "line 0\n" + read(os.path.join(repo.root, "shared.txt")),
                "base changes the same file, elsewhere")
    plant_everything(repo.common_dir, tree.path, at.git_dir)
    write(os.path.join(tree.path, "notes.txt"), "text a textconv would read\n")
    write(os.path.join(tree.path, "readme.md"), "markdown\n")
    write(os.path.join(tree.path, "data.proc"), "processed\n")
    with open(os.path.join(tree.path, "shared.txt"), "a", encoding="utf-8") as handle:
        handle.write("the branch's line\n")
    return repo, tree, at


def test_the_plants_are_live_when_git_is_run_by_hand(tmp_path):
    repo, tree, _at = planted(tmp_path)
    clear_markers(repo.common_dir)
    git(tree.path, "status", "--porcelain")
    git(tree.path, "add", "-A")
    git(tree.path, "diff", "--cached")
    ran = markers(repo.common_dir)
    for expected in ("nested-filter", "filter-clean", "include-filter", "worktree-config-filter", "filter-process",
                     "diff-external", "hook-post-index-change"):
        assert expected in ran, ran


def test_status_commit_diff_sync_predict_and_land_run_nothing(tmp_path, jails):
    repo, tree, at = planted(tmp_path)
    base_change = sha(repo.root, "main")
    clear_markers(repo.common_dir)
    assert roost_git.uncommitted_changes(at)
    head = roost_git.commit_all(at, "everything planted")
    assert roost_git.is_clean(at)
    touch_nested(tree.path)
    assert roost_git.is_clean(at)
    assert roost_git.diff(repo, "main", tree.branch).text
    assert roost_git.changed_files(repo, "main", tree.branch)
    from roost.git import overlap
    assert overlap.predict_merge(repo, "main", tree.branch).conflicts in ([], None)
    synced = roost_git.sync_with_base(repo, at, "main")
    assert synced.outcome == "merged" and synced.before == head, synced
    assert read(os.path.join(tree.path, "shared.txt")).startswith("line 0\n")
    landed = roost_git.land(repo, tree.branch, "main", mode="ff")
    assert landed.outcome == "landed" and sha(repo.root, "main") != base_change, landed
    assert read(os.path.join(repo.root, "notes.txt")) == "text a textconv would read\n"
    assert markers(repo.common_dir) == []
    assert git(repo.root, "ls-files", "-s", "sub").startswith("160000 ")     # the nested one as its HEAD


def test_done_commit_verify_merge_and_the_radar_of_the_daemon_run_nothing(daemon, tmp_path):
    lines = "".join(f"line {number}\n" for number in range(1, 21))
    root = project_repo(tmp_path / "repo", verify="test -f feature.txt",
                        files={"README": "a repository\n", "shared.txt": lines})
    repo = roost_git.repository_of(root)
    planted_task = task_op(daemon, action="add", title="Planted", project=root)["task"]["id"]
    other_task = task_op(daemon, action="add", title="Other", project=root)["task"]["id"]
    shown = task_op(daemon, action="approve", id=planted_task, dry=True)
    task_op(daemon, action="approve", id=planted_task, hash=shown["hash"])
    workspace, worker = prepared_and_started(daemon, planted_task, name="planter")
    other, _other_worker = prepared_and_started(daemon, other_task, name="other")
    commit_file(root, "shared.txt", "line 0\n" + lines, "base changes the shared file, elsewhere")
    at = roost_git.checkout_of(repo, workspace["path"])
    plant_everything(repo.common_dir, at.path, at.git_dir)
    write(os.path.join(at.path, "feature.txt"), "the feature\n")
    write(os.path.join(at.path, "notes.txt"), "text a textconv would read\n")
    write(os.path.join(at.path, "shared.txt"), lines + "the planter's line\n")
    write(os.path.join(other["path"], "shared.txt"), lines.replace("line 10\n", "line ten\n"))
    clear_markers(repo.common_dir)

    assert task_op(daemon, action="commit", id=planted_task, message="planted")["note"].startswith("committed ")
    task_op(daemon, action="commit", id=other_task, message="other")
    touch_nested(at.path)
    with speaker(daemon, worker) as client:
        assert task_op(client, action="done", id=planted_task)["task"]["workspace"]["stage"] == "verifying"
    reviewed = wait_stage(daemon, planted_task, "review")
    assert reviewed["workspace"]["verify"]["exit"] == 0
    assert "+the feature" in task_op(daemon, action="diff", id=planted_task)["diff"]["text"]
    # the radar read both worktrees and predicted their merge
    wait_for(lambda: any(item["task"] == other_task for item in
                         (next(task for task in task_op(daemon, action="list")["tasks"]
                               if task["id"] == planted_task)["workspace"].get("overlaps") or [])),
             timeout=20, what="the radar to see the two tasks overlap")
    merged = task_op(daemon, action="merge", id=planted_task)
    assert merged["task"]["workspace"]["stage"] == "merged", merged
    assert read(os.path.join(root, "shared.txt")).startswith("line 0\n")
    assert read(os.path.join(root, "feature.txt")) == "the feature\n"
    assert markers(repo.common_dir) == []


def test_a_worktree_s_git_dir_cannot_point_git_at_another_repository(tmp_path, jails):
    """A worktree's git dir (`.git/worktrees/<name>`) is its agent's to write; its
    `commondir` file names the repository git then uses. roost's runs use the repository
    it recorded, whatever that file says."""
    root = make_repo(str(tmp_path / "repo"))
    repo = roost_git.repository_of(root)
    tree = roost_git.add_worktree(repo, str(tmp_path / "wt"), roost_git.task_branch(repo, 1, "redirect"), "main")
    at = place(repo, tree)
    other = make_repo(str(tmp_path / "other"))
    before = sha(other, "main")
    write(os.path.join(tree.path, "work.txt"), "the task's work\n")
    recorded = read(os.path.join(at.git_dir, "commondir"))
    write(os.path.join(at.git_dir, "commondir"), os.path.join(other, ".git") + "\n")
    with pytest.raises(GitError) as refused:
        roost_git.commit_all(at, "into another repository")
    assert refused.value.reason == "tampered" and "commondir" in str(refused.value)
    assert sha(other, "main") == before and git(other, "branch", "--list", tree.branch) == ""
    write(os.path.join(at.git_dir, "commondir"), recorded)       # as git wrote it: served again
    head = roost_git.commit_all(at, "into the recorded repository")
    assert sha(root, tree.branch) == head


def test_a_fifo_planted_where_roost_reads_holds_nothing(tmp_path):
    """A fifo where roost reads a small file of git's (a worktree's commondir, its
    .gitmodules) is refused or passed over at once: opened, it would hold the daemon."""
    root = make_repo(str(tmp_path / "repo"))
    repo = roost_git.repository_of(root)
    tree = roost_git.add_worktree(repo, str(tmp_path / "wt"), roost_git.task_branch(repo, 1, "fifo"), "main")
    at = place(repo, tree)
    os.mkfifo(os.path.join(tree.path, ".gitmodules"))
    assert command.nested_left_alone(at) == []
    os.unlink(os.path.join(at.git_dir, "commondir"))
    os.mkfifo(os.path.join(at.git_dir, "commondir"))
    with pytest.raises(GitError) as refused:
        roost_git.uncommitted_changes(at)
    assert refused.value.reason == "tampered"
