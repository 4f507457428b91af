"""roost.git's reads of a committed file, its push and its pull request (M56, M60), and
its wait for a git still at work, on real repositories; `gh` is a fake on PATH that
records how it was run."""

import json
import os
import stat
import threading

import pytest

from gitkit import commit_file, git, isolated_git, make_repo, sha  # noqa: F401
from roost import git as roost_git
from roost.git.errors import GitError


@pytest.fixture
def repo(tmp_path):
    return roost_git.repository_of(make_repo(str(tmp_path / "repo")))


def test_a_committed_file_is_read_at_a_ref_and_a_missing_one_is_none(repo):
    commit_file(repo.root, ".roost/project.json", '{"verify": "make test"}\n')
    assert roost_git.file_at(repo, "main", ".roost/project.json") == b'{"verify": "make test"}\n'
    assert roost_git.file_at(repo, "main", "no/such/file") is None
    git(repo.root, "branch", "older", "HEAD~1")
    assert roost_git.file_at(repo, "older", ".roost/project.json") is None
    with pytest.raises(GitError):
        roost_git.file_at(repo, "main", "/etc/passwd")


def test_a_branch_is_pushed_to_origin_under_its_own_name(repo, tmp_path):
    remote = str(tmp_path / "remote.git")
    git(str(tmp_path), "init", "--quiet", "--bare", remote)
    with pytest.raises(GitError) as caught:
        roost_git.push_branch(repo, "main")
    assert caught.value.reason == "not_found"
    git(repo.root, "remote", "add", "origin", remote)
    git(repo.root, "branch", "roost/t1-x")
    assert roost_git.push_branch(repo, "roost/t1-x") == ("origin", sha(repo.root, "main"))
    assert git(remote, "rev-parse", "refs/heads/roost/t1-x") == sha(repo.root, "main")


def fake_gh(directory, exit_code=0):
    """A `gh` that writes its argv and cwd beside itself and prints an address."""
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, "gh")
    with open(path, "w") as handle:
        handle.write("#!/usr/bin/env python3\nimport json, os, sys\n"
                     f"json.dump({{'argv': sys.argv[1:], 'cwd': os.getcwd()}}, open({path + '.json'!r}, 'w'))\n"
                     "print('Creating pull request...')\n"
                     "print('https://github.invalid/o/r/pull/7')\n"
                     f"sys.exit({exit_code})\n")
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
    return path


def test_a_pull_request_is_opened_with_gh_in_the_repository_and_nothing_is_parsed(repo, tmp_path, monkeypatch):
    gh = fake_gh(str(tmp_path / "bin"))
    monkeypatch.setenv("PATH", str(tmp_path / "bin") + os.pathsep + os.environ["PATH"])
    title = "--fix $(touch x); rm -rf / \"quoted\" 'too' — ünïcode"      # an option's look, too
    url = roost_git.open_pull_request(repo.root, "main", "roost/t1-fix", title, "body `$(id)`")
    assert url == "https://github.invalid/o/r/pull/7"
    with open(gh + ".json") as handle:
        seen = json.load(handle)
    assert seen["cwd"] == repo.root
    assert seen["argv"] == ["pr", "create", "--base=main", "--head=roost/t1-fix", "--title=" + title,
                            "--body=body `$(id)`"]
    assert not os.path.exists(os.path.join(repo.root, "x"))


def test_gh_missing_or_failing_is_a_git_error(repo, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    if os.path.exists("/usr/bin/gh"):
        pytest.skip("a real gh is installed")
    with pytest.raises(GitError) as caught:
        roost_git.open_pull_request(repo.root, "main", "roost/t1-x", "t", "b")
    assert caught.value.reason == "not_found"
    fake_gh(str(tmp_path / "bin"), exit_code=1)
    monkeypatch.setenv("PATH", str(tmp_path / "bin") + os.pathsep + "/usr/bin:/bin")
    with pytest.raises(GitError) as caught:
        roost_git.open_pull_request(repo.root, "main", "roost/t1-x", "t", "b")
    assert caught.value.reason == "failed"


def test_a_wait_for_git_ends_when_no_index_lock_is_left(repo, tmp_path):
    tree = roost_git.add_worktree(repo, str(tmp_path / "wt"), "roost/t1-x", "main")
    assert roost_git.wait_until_idle(repo, timeout=1)
    admin = git(tree.path, "rev-parse", "--absolute-git-dir")
    lock = os.path.join(admin, "index.lock")
    open(lock, "w").close()
    assert not roost_git.wait_until_idle(repo, timeout=0.1)
    timer = threading.Timer(0.2, os.remove, [lock])
    timer.start()
    assert roost_git.wait_until_idle(repo, timeout=10)
    timer.join()


def test_merged_tips_names_the_merged_branches_with_their_tips(repo):
    git(repo.root, "branch", "old")
    git(repo.root, "checkout", "--quiet", "-b", "ahead")
    ahead = commit_file(repo.root, "new.txt", "new\n")
    git(repo.root, "checkout", "--quiet", "main")
    assert roost_git.merged_tips(repo, "main", ["old", "ahead"]) == {"old": sha(repo.root, "main")}
    git(repo.root, "merge", "--quiet", "--ff-only", "ahead")
    assert roost_git.merged_tips(repo, "main", ["old", "ahead"]) == {"old": sha(repo.root, "old"), "ahead": ahead}
    assert roost_git.merged_branches(repo, "main", ["ahead"]) == {"ahead"}
