"""A land under its lock, killed anywhere: base ends at its old commit or the new one,
never a third, and its checkout is set right by the next land. Each land that is
killed runs in a process of its own, stopped with SIGKILL at a named step
(`landing._reached`)."""

import os
import signal
import textwrap

import pytest

from conftest import wait_for
from gitkit import commit_file, git, isolated_git, make_repo, place, read, run_python, sha, write  # noqa: F401
from roost import git as roost_git
from roost.git import landing
from roost.git.errors import GitError

LAND = textwrap.dedent("""
    import os, signal, sys, time
    from roost import git
    from roost.git import landing
    root, branch, base, mode, kill_at, mark_at, mark, wait_for = sys.argv[1:9]
    def reached(step):
        if step == mark_at:
            open(mark, "w").close()
            deadline = time.monotonic() + 60
            while wait_for != "-" and not os.path.exists(wait_for) and time.monotonic() < deadline:
                time.sleep(0.01)
        if step == kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
    landing._reached = reached
    result = git.land(git.repository_of(root), branch, base, mode=mode)
    print(result.outcome, result.old, result.new)
""")


def start_land(root, branch, mode="ff", kill_at="-", mark_at="-", mark="-", wait_for_file="-"):
    return run_python(LAND, root, branch, "main", mode, kill_at, mark_at, mark, wait_for_file)


def task_with_work(repo, tmp_path, task_id=1, files=None):
    branch = roost_git.task_branch(repo, task_id, f"task {task_id}")
    task = roost_git.add_worktree(repo, str(tmp_path / f"wt{task_id}"), branch, "main")
    for name, text in (files or {"src/app.txt": "one\ntwo\nthree\nfour\n", "added/new.txt": "new\n"}).items():
        write(os.path.join(task.path, name), text)
    git(task.path, "rm", "--quiet", "--", "README")
    roost_git.commit_all(place(repo, task), "the task's work")
    return task


def checkout_matches_its_ref(root):
    """The checkout is clean and its files are its HEAD's, untracked ones included."""
    return git(root, "status", "--porcelain", "--untracked-files=all") == ""


def test_two_lands_at_once_one_waits_for_the_other(tmp_path):
    repo = roost_git.repository_of(make_repo(str(tmp_path / "repo")))
    first = task_with_work(repo, tmp_path, 1)
    second = roost_git.add_worktree(repo, str(tmp_path / "wt2"), "roost/t2-on-top", first.branch)
    commit_file(second.path, "second.txt", "2\n")
    old = sha(repo.root, "main")
    locked, release, waiting = tmp_path / "locked", tmp_path / "release", tmp_path / "waiting"
    holder = start_land(repo.root, first.branch, mark_at="locked", mark=locked, wait_for_file=release)
    wait_for(locked.exists, timeout=30, what="the first land to hold the lock")
    waiter = start_land(repo.root, second.branch, mark_at="waiting_for_lock", mark=waiting)
    wait_for(waiting.exists, timeout=30, what="the second land to wait for the lock")
    assert holder.poll() is None and waiter.poll() is None and sha(repo.root, "main") == old
    release.touch()
    for process in (holder, waiter):
        out, err = process.communicate(timeout=60)
        assert process.returncode == 0, err
    # one after the other: the second read base only once the first had moved it
    moves = git(repo.root, "log", "-g", "--format=%H %gs", "refs/heads/main").splitlines()
    assert moves[:2] == [f"{sha(repo.root, second.branch)} roost: land {second.branch} (ff)",
                         f"{sha(repo.root, first.branch)} roost: land {first.branch} (ff)"]
    assert checkout_matches_its_ref(repo.root)


def test_a_land_waits_only_as_long_as_it_is_told(tmp_path):
    repo = roost_git.repository_of(make_repo(str(tmp_path / "repo")))
    task = task_with_work(repo, tmp_path)
    with landing.RepositoryLock(repo):
        with pytest.raises(GitError) as error:
            roost_git.land(repo, task.branch, "main", lock_timeout=0.1)
    assert error.value.reason == "busy" and f"pid {os.getpid()}" in str(error.value)


STEPS_WITH_A_CHECKOUT = ["locked", "merge_commit_written", "recorded", "checkout_updated", "ref_moved"]


@pytest.mark.parametrize("mode", ["ff", "no-ff"])
@pytest.mark.parametrize("step", STEPS_WITH_A_CHECKOUT)
def test_a_land_killed_at_any_step_leaves_base_old_or_new(tmp_path, step, mode):
    repo = roost_git.repository_of(make_repo(str(tmp_path / "repo")))
    task = task_with_work(repo, tmp_path)
    old, tip = sha(repo.root, "main"), sha(repo.root, task.branch)
    process = start_land(repo.root, task.branch, mode, kill_at=step)
    process.communicate(timeout=60)
    assert process.returncode == -signal.SIGKILL       # it got there, and died there
    after = sha(repo.root, "main")
    assert after == old or (after == tip if mode == "ff" else git(repo.root, "rev-parse", "main^2") == tip)
    landed_before = after != old

    # the next land sets the checkout right first, then lands (or finds it landed)
    result = roost_git.land(repo, task.branch, "main", mode=mode)
    assert result.outcome == ("up_to_date" if landed_before else "landed")
    if step == "checkout_updated":
        assert "files set back" in result.repaired
    assert roost_git.is_merged(repo, task.branch, "main") and checkout_matches_its_ref(repo.root)
    assert read(os.path.join(repo.root, "added/new.txt")) == "new\n" and not os.path.exists(
        os.path.join(repo.root, "README"))


@pytest.mark.parametrize("step", ["merge_commit_written", "ref_moved"])
def test_a_land_by_update_ref_killed_leaves_base_old_or_new(tmp_path, step):
    repo = roost_git.repository_of(make_repo(str(tmp_path / "repo")))
    task = task_with_work(repo, tmp_path)
    git(repo.root, "checkout", "--quiet", "--detach")       # base checked out nowhere
    old, tip = sha(repo.root, "main"), sha(repo.root, task.branch)
    process = start_land(repo.root, task.branch, "ff", kill_at=step)
    process.communicate(timeout=60)
    assert process.returncode == -signal.SIGKILL
    assert sha(repo.root, "main") == (tip if step == "ref_moved" else old)
    assert checkout_matches_its_ref(repo.root)


def interrupted_land(repo, tmp_path):
    """A land stopped inside git's update of the checkout: its record written, some files
    of the new commit on disk, one staged, the ref not moved."""
    task = task_with_work(repo, tmp_path)
    old, new = sha(repo.root, "main"), sha(repo.root, task.branch)
    with landing.RepositoryLock(repo) as lock:
        lock.record({"base": "main", "old": old, "new": new, "checkout": repo.root})
    git(repo.root, "checkout", new, "--", "src/app.txt")            # index and file: new
    write(os.path.join(repo.root, "added/new.txt"), "new\n")        # file only, untracked
    os.unlink(os.path.join(repo.root, "README"))                    # deleted on disk only
    return task, old, new


def test_a_checkout_left_part_way_is_set_back_to_its_ref(tmp_path):
    repo = roost_git.repository_of(make_repo(str(tmp_path / "repo")))
    _task, old, _new = interrupted_land(repo, tmp_path)
    assert not checkout_matches_its_ref(repo.root)
    note = roost_git.recover_land(repo)
    assert "3 files set back" in note and sha(repo.root, "main") == old
    assert checkout_matches_its_ref(repo.root) and not os.path.exists(os.path.join(repo.root, "added"))
    assert roost_git.recover_land(repo) == ""           # the record is gone


def test_a_checkout_with_someone_s_work_in_it_is_left_alone(tmp_path):
    repo = roost_git.repository_of(make_repo(str(tmp_path / "repo")))
    _task, old, _new = interrupted_land(repo, tmp_path)
    write(os.path.join(repo.root, "src/app.txt"), "a person's edit\n")
    note = roost_git.recover_land(repo)
    assert "did not make (src/app.txt)" in note and sha(repo.root, "main") == old
    assert read(os.path.join(repo.root, "src/app.txt")) == "a person's edit\n"
    assert read(os.path.join(repo.root, "added/new.txt")) == "new\n"


@pytest.mark.parametrize("checked_out", [True, False])
def test_base_moved_by_another_writer_under_the_land_is_never_overwritten(tmp_path, monkeypatch, checked_out):
    repo = roost_git.repository_of(make_repo(str(tmp_path / "repo")))
    task = task_with_work(repo, tmp_path)
    if not checked_out:
        git(repo.root, "checkout", "--quiet", "--detach")
    old = sha(repo.root, "main")
    # a writer that ignores roost's lock, moving base to a commit of its own
    third = git(repo.root, "commit-tree", "main^{tree}", "-p", "main", "-m", "another writer")
    step = "checkout_updated" if checked_out else "merge_commit_written"
    monkeypatch.setattr(landing, "_reached", lambda at: at == step and git(
        repo.root, "update-ref", "refs/heads/main", third, old))
    with pytest.raises(GitError) as error:
        roost_git.land(repo, task.branch, "main")
    assert error.value.reason == "moved" and sha(repo.root, "main") == third
    # what the land had written into the checkout is undone (third has old's tree)
    assert checkout_matches_its_ref(repo.root)
