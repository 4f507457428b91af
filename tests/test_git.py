"""roost.git on real repositories: a task's whole path (worktree, commit, sync, land by
ff, no-ff and update-ref), conflicts and their abort, what is refused to keep work,
branch names from hostile titles, the environment every git run gets. The lock and
the kill tests of a land are in test_git_land.py."""

import os
import stat
import subprocess
import textwrap

import pytest

from conftest import wait_for
from gitkit import commit_file, git, isolated_git, make_repo, place, read, run_python, sha, write  # noqa: F401
from roost import git as roost_git
from roost.git import command
from roost.git.errors import GitError


@pytest.fixture
def repo(tmp_path):
    return roost_git.repository_of(make_repo(str(tmp_path / "repo")))


def new_task(repo, tmp_path, task_id=1, title="a task"):
    branch = roost_git.task_branch(repo, task_id, title)
    return roost_git.add_worktree(repo, str(tmp_path / f"wt{task_id}"), branch, "main")


def test_the_whole_path_worktree_commit_sync_and_land_three_ways(repo, tmp_path):
    main = repo.root
    first = new_task(repo, tmp_path, 1, "First task")
    assert first.branch == "roost/t1-first-task" and first.head == sha(main, "main")
    assert roost_git.repository_of(os.path.join(first.path, "src")) == repo
    write(os.path.join(first.path, "src/app.txt"), "one\ntwo\nthree\nfour\n")
    write(os.path.join(first.path, "notes.md"), "new file\n")
    assert not roost_git.is_clean(place(repo, first))
    tip = roost_git.commit_all(place(repo, first), "Add four and notes")
    assert tip == sha(first.path, "HEAD") and roost_git.is_clean(place(repo, first))
    assert roost_git.commit_all(place(repo, first), "nothing") is None

    # base moves on: the sync merges it into the branch, in the worktree
    commit_file(main, "README", "a repository, changed on base\n")
    assert not roost_git.is_merged(repo, "main", first.branch)
    synced = roost_git.sync_with_base(repo, place(repo, first), "main")
    assert synced.outcome == "merged" and synced.base == sha(main, "main")
    assert git(first.path, "rev-list", "--parents", "-n1", "HEAD").count(" ") == 2    # a merge commit
    assert roost_git.sync_with_base(repo, place(repo, first), "main").outcome == "up_to_date"
    assert [(f.status, f.path) for f in roost_git.changed_files(repo, "main", first.branch)] == \
        [("A", "notes.md"), ("M", "src/app.txt")]
    review = roost_git.diff(repo, "main", first.branch)
    assert "+four" in review.text and "+new file" in review.text and "README" not in review.text

    # ff: base checked out in the main checkout, which comes along
    landed = roost_git.land(repo, first.branch, "main", mode="ff")
    assert (landed.outcome, landed.checkout, landed.new) == ("landed", main, synced.head)
    assert sha(main, "main") == synced.head and read(os.path.join(main, "notes.md")) == "new file\n"
    assert git(main, "status", "--porcelain") == ""
    assert roost_git.is_merged(repo, first.branch, "main")
    assert roost_git.land(repo, first.branch, "main").outcome == "up_to_date"

    # no-ff: a merge commit on base, its second parent the branch
    second = new_task(repo, tmp_path, 2, "Second")
    commit_file(second.path, "second.txt", "2\n")
    before = sha(main, "main")
    landed = roost_git.land(repo, second.branch, "main", mode="no-ff")
    parents = git(main, "rev-list", "--parents", "-n1", "main").split()
    assert parents == [landed.new, before, sha(main, second.branch)]
    assert git(main, "log", "-1", "--format=%s", "main") == f"Merge branch '{second.branch}' into main"
    assert read(os.path.join(main, "second.txt")) == "2\n" and git(main, "status", "--porcelain") == ""

    # base checked out nowhere: only its ref moves (update-ref), no checkout is touched
    third = new_task(repo, tmp_path, 3, "Third")
    commit_file(third.path, "third.txt", "3\n")
    git(main, "checkout", "--quiet", "--detach")
    landed = roost_git.land(repo, third.branch, "main", mode="ff")
    assert landed.checkout is None and sha(main, "main") == sha(main, third.branch)
    assert not os.path.exists(os.path.join(main, "third.txt"))
    assert git(main, "log", "-g", "-1", "--format=%gs", "refs/heads/main") == f"roost: land {third.branch} (ff)"


def test_a_real_conflict_stops_the_sync_and_abort_gives_it_up(repo, tmp_path):
    task = new_task(repo, tmp_path)
    commit_file(task.path, "src/app.txt", "one\nTWO on the branch\nthree\n")
    commit_file(repo.root, "src/app.txt", "one\ntwo on base\nthree\n")
    head = sha(task.path, "HEAD")
    result = roost_git.sync_with_base(repo, place(repo, task), "main")
    assert (result.outcome, result.conflicts, result.head) == ("conflict", ["src/app.txt"], head)
    assert "<<<<<<<" in read(os.path.join(task.path, "src/app.txt"))
    with pytest.raises(GitError) as refused:
        roost_git.commit_all(place(repo, task), "would commit the markers")
    assert refused.value.reason == "conflict"
    assert roost_git.sync_with_base(repo, place(repo, task), "main").outcome == "refused"
    assert roost_git.abort_sync(place(repo, task)) is True
    assert sha(task.path, "HEAD") == head and roost_git.is_clean(place(repo, task))
    assert roost_git.abort_sync(place(repo, task)) is False

    # resolved and committed, the merge is concluded and the branch can land
    roost_git.sync_with_base(repo, place(repo, task), "main")
    write(os.path.join(task.path, "src/app.txt"), "one\nboth\nthree\n")
    merged = roost_git.commit_all(place(repo, task), "Resolve")
    assert len(git(task.path, "rev-list", "--parents", "-n1", merged).split()) == 3
    assert roost_git.land(repo, task.branch, "main").outcome == "landed"
    assert read(os.path.join(repo.root, "src/app.txt")) == "one\nboth\nthree\n"


def test_dirty_worktrees_are_refused_where_work_would_be_lost_and_other_edits_stay(repo, tmp_path):
    task = new_task(repo, tmp_path)
    commit_file(task.path, "done.txt", "done\n")
    commit_file(repo.root, "README", "moved on\n")
    write(os.path.join(task.path, "scratch.txt"), "untracked work\n")
    refused = roost_git.sync_with_base(repo, place(repo, task), "main")
    assert refused.outcome == "refused" and "scratch.txt" in refused.detail
    with pytest.raises(GitError) as error:
        roost_git.remove_worktree(repo, task.path)
    assert error.value.reason == "dirty" and os.path.exists(os.path.join(task.path, "scratch.txt"))
    os.unlink(os.path.join(task.path, "scratch.txt"))
    assert roost_git.sync_with_base(repo, place(repo, task), "main").outcome == "merged"

    # the main checkout, where base is checked out: a file the land changes must be as
    # committed there, or nothing moves and nothing is lost
    commit_file(task.path, "src/app.txt", "changed by the task\n")
    before = sha(repo.root, "main")
    write(os.path.join(repo.root, "src/app.txt"), "edited by hand, not committed\n")
    with pytest.raises(GitError) as error:
        roost_git.land(repo, task.branch, "main")
    assert error.value.reason == "dirty" and error.value.code == "bad_request" and "src/app.txt" in str(error.value)
    assert sha(repo.root, "main") == before
    assert read(os.path.join(repo.root, "src/app.txt")) == "edited by hand, not committed\n"

    # an untracked file where the land would write one: nothing moves, nothing is lost
    git(repo.root, "checkout", "--quiet", "--", "src/app.txt")
    write(os.path.join(repo.root, "done.txt"), "mine\n")
    with pytest.raises(GitError) as error:
        roost_git.land(repo, task.branch, "main")
    assert error.value.reason == "dirty" and "done.txt" in str(error.value)
    assert sha(repo.root, "main") == before and read(os.path.join(repo.root, "done.txt")) == "mine\n"
    assert git(repo.root, "status", "--porcelain", "--untracked-files=no") == ""

    # a file touched but not changed is no refusal; a person's edit to a file the land
    # does not change stays as it is, as with `git merge`
    os.unlink(os.path.join(repo.root, "done.txt"))
    os.utime(os.path.join(repo.root, "src/app.txt"), (1, 1))
    write(os.path.join(repo.root, "README"), "edited by hand, kept\n")
    landed = roost_git.land(repo, task.branch, "main")
    assert landed.outcome == "landed" and sha(repo.root, "main") == sha(task.path, "HEAD")
    assert read(os.path.join(repo.root, "README")) == "edited by hand, kept\n"
    assert read(os.path.join(repo.root, "src/app.txt")) == "changed by the task\n"
    assert read(os.path.join(repo.root, "done.txt")) == "done\n"
    assert git(repo.root, "status", "--porcelain", "--untracked-files=no") == "M README"


def test_a_land_of_a_branch_that_lacks_base_is_refused(repo, tmp_path):
    task = new_task(repo, tmp_path)
    commit_file(task.path, "x.txt", "x\n")
    commit_file(repo.root, "README", "base moved\n")
    before = sha(repo.root, "main")
    for mode in ("ff", "no-ff"):
        with pytest.raises(GitError) as error:
            roost_git.land(repo, task.branch, "main", mode=mode)
        assert error.value.reason == "not_synced"
    assert sha(repo.root, "main") == before


def test_base_being_rebased_is_not_landed_on(repo, tmp_path):
    git(repo.root, "checkout", "--quiet", "-b", "other")
    commit_file(repo.root, "README", "other's readme\n")
    git(repo.root, "checkout", "--quiet", "main")
    commit_file(repo.root, "README", "main's readme\n")
    task = new_task(repo, tmp_path)
    commit_file(task.path, "x.txt", "x\n")
    stopped = subprocess.run(["git", "rebase", "other"], cwd=repo.root, capture_output=True)
    assert stopped.returncode != 0       # stopped on the conflict, main being rebased
    assert roost_git.checked_out_at(repo, "main") == repo.root
    with pytest.raises(GitError) as error:
        roost_git.land(repo, task.branch, "main")
    assert error.value.reason == "busy"
    git(repo.root, "rebase", "--abort")


def test_remove_refuses_unmerged_work_unless_forced_and_keeps_the_branch(repo, tmp_path):
    task = new_task(repo, tmp_path)
    tip = commit_file(task.path, "work.txt", "work\n")
    with pytest.raises(GitError) as error:
        roost_git.remove_worktree(repo, task.path, base="main")
    assert error.value.reason == "unmerged" and "1 commit not merged into main" in str(error.value)
    roost_git.remove_worktree(repo, task.path)          # no base: the branch keeps the work
    assert not os.path.exists(task.path) and sha(repo.root, task.branch) == tip
    again = roost_git.add_worktree(repo, task.path, task.branch)      # a shelved task, back
    assert again.head == tip and read(os.path.join(task.path, "work.txt")) == "work\n"
    write(os.path.join(task.path, "work.txt"), "more, uncommitted\n")
    roost_git.remove_worktree(repo, task.path, base="main", force=True)
    assert not os.path.exists(task.path)
    with pytest.raises(GitError) as error:
        roost_git.delete_branch(repo, task.branch, base="main")
    assert error.value.reason == "unmerged"
    roost_git.delete_branch(repo, task.branch, base="main", force=True)
    assert roost_git.ref_sha(repo, task.branch) is None
    with pytest.raises(GitError) as error:
        roost_git.remove_worktree(repo, repo.root, force=True)
    assert error.value.reason == "checked_out"


def test_worktrees_listed_pruned_and_their_branches_held(repo, tmp_path):
    task = new_task(repo, tmp_path)
    listed = roost_git.list_worktrees(repo)
    assert [(w.path, w.branch, w.main) for w in listed] == [(repo.root, "main", True), (task.path, task.branch, False)]
    assert listed[1].head == sha(repo.root, "main") and not listed[1].prunable
    with pytest.raises(GitError) as error:
        roost_git.add_worktree(repo, str(tmp_path / "again"), task.branch)
    assert error.value.reason == "checked_out"
    with pytest.raises(GitError) as error:
        roost_git.add_worktree(repo, str(tmp_path / "again"), task.branch, "main")
    assert error.value.reason == "exists"
    subprocess.run(["rm", "-rf", "--", task.path], check=True)
    gone = [w for w in roost_git.list_worktrees(repo) if w.path == task.path][0]
    assert gone.prunable and roost_git.checked_out_at(repo, task.branch) == task.path
    assert [w.path for w in roost_git.prune_worktrees(repo, dry=True)] == [task.path]
    assert len(roost_git.list_worktrees(repo)) == 2
    assert [w.path for w in roost_git.prune_worktrees(repo)] == [task.path]
    assert len(roost_git.list_worktrees(repo)) == 1 and roost_git.checked_out_at(repo, task.branch) is None


def test_repository_of_any_directory_and_worktree(repo, tmp_path):
    task = new_task(repo, tmp_path)
    assert roost_git.repository_of(os.path.join(repo.root, "src")) == repo
    assert roost_git.repository_of(task.path) == repo
    outside = tmp_path / "plain"
    outside.mkdir()
    assert roost_git.repository_of(str(outside)) is None
    bare = str(tmp_path / "bare.git")
    git(str(tmp_path), "clone", "--quiet", "--bare", repo.root, bare)
    git(bare, "worktree", "add", "--quiet", str(tmp_path / "from-bare"), "main")
    found = roost_git.repository_of(str(tmp_path / "from-bare"))
    assert (found.root, found.bare) == (bare, True)
    assert roost_git.checked_out_branch(repo) == "main" and roost_git.ref_sha(repo, "nope") is None
    git(repo.root, "checkout", "--quiet", "--detach")
    assert roost_git.checked_out_branch(repo) is None


# -- names -----------------------------------------------------------------------------

HOSTILE = 'Fix "it" $(touch x); rm -rf ~ `touch x` && echo \'pwned\' | ünïcödé 日本語 ' + "very long " * 30


def test_a_hostile_title_gives_a_valid_branch_and_runs_nothing(repo, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    branch = roost_git.task_branch(repo, 12, HOSTILE)
    assert branch.startswith("roost/t12-fix-it-touch-x-rm-rf-touch-x-echo")
    assert branch.isascii() and len(branch) <= len("roost/t12-") + roost_git.names.SLUG_LENGTH
    assert git(repo.root, "check-ref-format", "--branch", branch) == branch
    task = roost_git.add_worktree(repo, str(tmp_path / "wt"), branch, "main")
    commit_file(task.path, "a.txt", "a\n")
    assert roost_git.land(repo, branch, "main").outcome == "landed"
    roost_git.commit_all(place(repo, task), HOSTILE)
    for where in (tmp_path, repo.root, task.path, os.path.expanduser("~")):
        assert not os.path.exists(os.path.join(where, "x"))
    assert roost_git.slug("") == roost_git.slug("日本語") == roost_git.slug("$(;)") == "task"
    assert roost_git.slug("Café crème") == "cafe-creme"


def test_a_taken_name_gets_a_suffix(repo):
    git(repo.root, "branch", "roost/t3-fix")
    assert roost_git.task_branch(repo, 3, "Fix") == "roost/t3-fix-2"
    git(repo.root, "branch", "roost/t3-fix-2")
    assert roost_git.task_branch(repo, 3, "fix!") == "roost/t3-fix-3"
    git(repo.root, "branch", "roost/t4-dir/inside")         # a ref under the name: taken too
    assert roost_git.task_branch(repo, 4, "dir") == "roost/t4-dir-2"
    with pytest.raises(GitError):
        roost_git.task_branch(repo, "1; rm", "x")


NAMES = ["main", "roost/t1-x", "a.b", "x-", "@", "a@b", "é", "HEAD/x", "x/HEAD", "FETCH_HEAD",
         "HEAD", "-x", "-", "a b", "a~b", "a^b", "a:b", "a?b", "a*b", "a[b", "a\\b", ".a", "a.", "a.lock",
         "a/.b", "a//b", "/a", "a/", "a..b", "a\x7fb", "a\tb", "a/b.lock/c", "a@{b"]


def test_branch_names_are_checked_by_git_s_own_rules():
    for name in NAMES:
        git_says = subprocess.run(["git", "check-ref-format", "--branch", name], capture_output=True).returncode == 0
        try:
            roost_git.check_branch_name(name)
            ours = True
        except GitError as error:
            assert error.reason == "invalid_name"
            ours = False
        assert ours == git_says, name
    with pytest.raises(GitError):
        roost_git.check_branch_name("@{-1}")        # git would expand it to another branch


# -- each run of git ---------------------------------------------------------------------

def test_no_identity_is_a_clear_error(tmp_path):
    path = make_repo(str(tmp_path / "anon"), identity=False)
    git(path, "config", "user.useConfigOnly", "true")       # no guess from the host's name
    with pytest.raises(GitError) as error:
        roost_git.commit_all(path, "first")
    assert error.value.reason == "no_identity" and "user.email" in str(error.value)


def test_git_runs_with_the_user_s_environment_and_no_prompt(repo, tmp_path, monkeypatch):
    other = make_repo(str(tmp_path / "other"))
    write(os.path.join(other, "README"), "dirty\n")
    monkeypatch.setenv("GIT_DIR", os.path.join(other, ".git"))     # as in a shell of a hook
    monkeypatch.setenv("ROOST_TEST_MARK", "kept")
    assert roost_git.is_clean(repo.root) and not roost_git.is_clean(other)
    env = command.git_environ()
    assert env["ROOST_TEST_MARK"] == "kept" and "GIT_DIR" not in env
    assert (env["GIT_TERMINAL_PROMPT"], env["GIT_EDITOR"], env["GIT_PAGER"]) == ("0", "true", "cat")
    monkeypatch.delenv("GIT_DIR")
    # the user's editor, one that would wait forever, is never started: not for a
    # sync's merge commit, not even for a command that always asks for one
    git(repo.root, "config", "core.editor", "sleep 600")
    task = new_task(repo, tmp_path)
    commit_file(task.path, "b.txt", "b\n")
    commit_file(repo.root, "c.txt", "c\n")
    assert roost_git.sync_with_base(repo, place(repo, task), "main").outcome == "merged"
    assert command.run(["commit", "--amend", "--quiet"], place(repo, task), timeout=20).ok


def slow_filter(isolated_git, repo, script):
    """A filter of the user's own (their global config: the person's, so it runs) on
    every file of `repo`, running `script`."""
    git(repo.root, "config", "--file", str(isolated_git), "filter.slow.clean", f"sh -c '{script}; cat'")
    write(os.path.join(repo.root, ".gitattributes"), "* filter=slow\n")


def test_a_run_past_its_timeout_is_killed_with_what_it_started(repo, isolated_git):
    started = os.path.join(repo.common_dir, "slow-started")
    slow_filter(isolated_git, repo, f": > {started}; exec sleep 600.25")
    write(os.path.join(repo.root, "a.txt"), "a\n")
    with pytest.raises(GitError) as error:
        roost_git.commit_all(repo.root, "slow", timeout=1)
    assert error.value.reason == "timeout" and os.path.exists(started)
    wait_for(lambda: not _running("600.25"), timeout=10, what="the filter to be killed")


def _running(word):
    """Live processes whose command line has `word`."""
    found = []
    for name in os.listdir("/proc"):
        try:
            with open(f"/proc/{name}/cmdline", "rb") as handle:
                words = handle.read().split(b"\0")
            with open(f"/proc/{name}/stat") as handle:
                zombie = handle.read().rsplit(")", 1)[1].split()[0] == "Z"
        except (OSError, IndexError):
            continue
        if word.encode() in words and not zombie:
            found.append(int(name))
    return found


def test_worktree_files_get_the_user_s_umask_not_the_daemon_s(repo, tmp_path):
    previous = os.umask(0o077)          # the daemon's own
    try:
        command.use_umask(0o022)
        task = new_task(repo, tmp_path)
    finally:
        command.use_umask(None)
        os.umask(previous)
    assert stat.S_IMODE(os.stat(os.path.join(task.path, "README")).st_mode) == 0o644


def test_a_long_diff_is_cut(repo, tmp_path):
    task = new_task(repo, tmp_path)
    commit_file(task.path, "big.txt", "a line of the diff\n" * 5000)
    cut = roost_git.diff(repo, "main", task.branch, max_bytes=1000)
    assert cut.truncated and len(cut.text) == 1000 and cut.text.startswith("diff --git a/big.txt b/big.txt")
    assert not roost_git.diff(repo, "main", task.branch).truncated


COOPERATIVE = textwrap.dedent("""
    import os, sys
    from roost.daemon import patching
    patching.patch()
    import gevent
    from roost import blocking, git
    blocking.use_threadpool()
    worktree, started, flag = sys.argv[1:4]
    def answer_the_hook():
        # runs only if the loop turns while the commit's hook waits on it
        while not os.path.exists(started):
            gevent.sleep(0.01)
        open(flag, "w").close()
    helper = gevent.spawn(answer_the_hook)
    repo = git.repository_of(worktree)
    print(git.commit_all(worktree, "under gevent"), repo.root)
    helper.join()
""")


def test_under_the_daemon_s_patching_a_git_run_never_holds_the_loop(repo, isolated_git):
    # in the repository's git dir: the one place besides the worktree a jailed git writes
    started, flag = os.path.join(repo.common_dir, "started"), os.path.join(repo.common_dir, "flag")
    slow_filter(isolated_git, repo, f": > {started}; i=0; while [ ! -e {flag} ]; do i=$((i+1)); "
                                    "[ $i -gt 3000 ] && exit 1; sleep 0.01; done")
    write(os.path.join(repo.root, "a.txt"), "a\n")
    process = run_python(COOPERATIVE, repo.root, started, flag)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    assert out.split() == [sha(repo.root, "HEAD"), repo.root]


UNHEARD = textwrap.dedent("""
    import os, signal
    from roost.daemon import patching
    patching.patch()
    import gevent
    from roost import git
    gevent.get_hub().loop.install_sigchld()
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)      # from now on a child's end goes unheard
    print(git.repository_of(os.getcwd()).root == os.getcwd(), git.is_clean(os.getcwd()))
""")


def test_a_git_run_whose_end_went_unheard_still_ends(repo):
    """libev learns of a child's end from SIGCHLD; one lost (it came before libev's
    handler, or the handler was replaced) leaves a zombie that the wait reaps itself,
    long before the run's deadline."""
    process = run_python(UNHEARD, cwd=repo.root)
    out, err = process.communicate(timeout=20)
    assert process.returncode == 0, err
    assert out.split() == ["True", "True"]


def test_the_board_s_questions_of_many_branches_and_a_rename(repo, tmp_path):
    landed, open_ = new_task(repo, tmp_path, 1, "landed"), new_task(repo, tmp_path, 2, "open")
    commit_file(landed.path, "one.txt", "1\n")
    git(open_.path, "mv", "src/app.txt", "src/renamed.txt")
    git(open_.path, "commit", "--quiet", "-m", "rename")
    roost_git.land(repo, landed.branch, "main")
    assert roost_git.merged_branches(repo, "main", [landed.branch, open_.branch]) == {landed.branch}
    assert roost_git.merged_branches(repo, "main", []) == set()
    assert roost_git.commits_ahead(repo, open_.branch, "main") == 1
    assert roost_git.changed_files(repo, "main", open_.branch) == [
        roost_git.ChangedFile("R", "src/renamed.txt", "src/app.txt")]


def test_a_worktree_is_run_through_its_record_never_its_own_git_file(repo, tmp_path):
    task = new_task(repo, tmp_path)
    at = place(repo, task)
    assert at.git_dir == os.path.join(repo.common_dir, "worktrees", "wt1") and not at.main
    assert roost_git.checkout_of(repo, repo.root).main
    with pytest.raises(GitError) as bare:
        roost_git.is_clean(task.path)                # a bare path of a linked worktree
    assert bare.value.reason == "tampered"
    done = command.run(["status", "--porcelain"], at)
    argv = done.argv[done.argv.index("--") + 1:] if done.argv[0] == "bwrap" else done.argv   # jailed or not
    assert argv[1:5] == ["-C", at.path, "--git-dir=" + at.git_dir, "--work-tree=" + at.path]
    assert "core.fsmonitor=false" in argv and "core.hooksPath=/dev/null" in argv
    other = make_repo(str(tmp_path / "other"))
    write(os.path.join(task.path, ".git"), f"gitdir: {other}/.git\n")
    for call in (lambda: roost_git.is_clean(at), lambda: roost_git.worktree_head(at),
                 lambda: roost_git.checkout_of(repo, task.path)):
        with pytest.raises(GitError) as changed:
            call()
        assert changed.value.reason == "tampered" and "no longer points" in str(changed.value)


def test_a_main_checkout_whose_git_is_a_file_is_still_the_user_s(tmp_path):
    """A submodule's checkout (or `clone --separate-git-dir`) has a .git file that is no
    linked worktree's: roost's runs there, and its check, take it as the user's own."""
    origin = make_repo(str(tmp_path / "origin"))
    subprocess.run(["git", "clone", "--quiet", "--separate-git-dir", str(tmp_path / "store.git"), origin,
                    str(tmp_path / "clone")], check=True, capture_output=True, timeout=60)
    clone = str(tmp_path / "clone")
    found = roost_git.repository_of(clone)
    assert roost_git.is_clean(clone) and roost_git.checkout_of(found, clone).main
    assert roost_git.worktree_head(clone)[0] == "main"
