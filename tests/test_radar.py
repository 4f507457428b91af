"""The overlap radar (issue 20) against a real daemon, real repositories and real holders:
two worktrees editing one file with a predicted conflict, a clean overlap (different
hunks), no overlap; each holder told once; an overlap that ends when one side reverts;
a holder going quiet refreshes what its worktree touches; an old git reported, not
crashed; claims on paths; the train's order with one predicted conflict."""

import os
import stat

from boardkit import find, notes_for, prepared_and_started, project_repo, refused, task_op, was_told
from conftest import DaemonProcess, tracebacks_in_log, wait_for
from gitkit import commit_file, git, isolated_git, write  # noqa: F401
from peerkit import speaker

LINES = "".join(f"line {number}\n" for number in range(1, 21))


def two_tasks(daemon, tmp_path, files=None):
    root = project_repo(tmp_path / "repo", files=files or {"README": "a repository\n", "src/app.txt": LINES,
                                                           "src/other.txt": "other\n"})
    first = task_op(daemon, action="add", title="First", project=root)["task"]["id"]
    second = task_op(daemon, action="add", title="Second", project=root)["task"]["id"]
    one, job_one = prepared_and_started(daemon, first, name="alice")
    two, job_two = prepared_and_started(daemon, second, name="bob")
    return root, (first, one["path"], job_one), (second, two["path"], job_two)


def edit_and_commit(daemon, task_id, tree, name, replace=None, text=None):
    """Change a file of the worktree (a line replaced, or whole) and commit it with the
    board's own commit (after which the radar reads the worktree again)."""
    path = os.path.join(tree, name)
    if replace is not None:
        with open(path, encoding="utf-8") as handle:
            text = handle.read().replace(*replace)
    write(path, text)
    return task_op(daemon, action="commit", id=task_id, message=f"edit {name}")


def overlaps(daemon, task_id):
    return (find(daemon, task_id).get("workspace") or {}).get("overlaps") or []


def wait_overlaps(daemon, task_id, check, what):
    found = []

    def seen():
        found[:] = [overlaps(daemon, task_id)]
        return bool(check(found[0]))

    wait_for(seen, timeout=20, what=f"task #{task_id}'s overlaps: {what} (they are {found})")
    return found[0]


def radar_notes(daemon, job_id, other_id):
    return [text for text in notes_for(daemon, job_id) if f"Task #{other_id} (" in text and "touches files" in text]


def test_the_same_lines_edited_in_two_worktrees_predict_a_conflict_told_once_to_each(daemon, tmp_path):
    _root, (first, tree_one, job_one), (second, tree_two, job_two) = two_tasks(daemon, tmp_path)
    edit_and_commit(daemon, first, tree_one, "src/app.txt", replace=("line 3\n", "line three by alice\n"))
    edit_and_commit(daemon, second, tree_two, "src/app.txt", replace=("line 3\n", "line 3, bob's\n"))

    found = wait_overlaps(daemon, first, lambda found: found and found[0].get("conflicts"), "a conflict")
    assert found == [{"task": second, "files": ["src/app.txt"], "conflicts": ["src/app.txt"]}]
    assert overlaps(daemon, second) == [{"task": first, "files": ["src/app.txt"], "conflicts": ["src/app.txt"]}]

    wait_for(lambda: was_told(daemon, job_one, f"Task #{second} (Second), held by bob") and
             was_told(daemon, job_two, f"Task #{first} (First), held by alice"), timeout=20, what="both holders told")
    wait_for(lambda: was_told(daemon, job_one, "git predicts a conflict when both are merged, in src/app.txt"),
             timeout=20, what="alice told of the conflict")
    assert was_told(daemon, job_one, f"roost task diff {second}")

    def overlap_events():
        events = daemon.call("events", limit=200)["events"]
        return [event for event in events if event.get("kind") == "task" and event.get("why") == "overlap"
                and "git predicts a conflict in src/app.txt" in event["text"]]

    wait_for(overlap_events, what="a task event with why overlap, the conflict predicted")

    # the same pair and the same file again: nobody is told twice
    edit_and_commit(daemon, second, tree_two, "src/app.txt", replace=("line 4\n", "line 4, bob's again\n"))
    wait_for(lambda: find(daemon, second)["workspace"].get("overlaps"), what="the radar read it again")
    after = task_op(daemon, action="list")["tasks"]
    told = [task["overlapsTold"] for task in after if task["id"] in (first, second)]
    assert [len(records) for records in told] == [1, 1] and all(records[0]["conflict"] for records in told)
    assert len(radar_notes(daemon, job_one, second)) <= 2 and len(radar_notes(daemon, job_two, first)) <= 2

    # what was told is kept on the task, across a restart
    daemon.restart()
    assert [find(daemon, task_id)["overlapsTold"] for task_id in (first, second)] == told
    assert overlaps(daemon, first)[0]["conflicts"] == ["src/app.txt"]


def test_different_hunks_of_one_file_overlap_cleanly_and_other_files_do_not_overlap(daemon, tmp_path):
    _root, (first, tree_one, _job_one), (second, tree_two, _job_two) = two_tasks(daemon, tmp_path)
    edit_and_commit(daemon, first, tree_one, "src/app.txt", replace=("line 2\n", "line two\n"))
    edit_and_commit(daemon, second, tree_two, "src/other.txt", text="bob's other\n")
    # the second's commit compared it with the first: apart, so no overlap
    wait_for(lambda: find(daemon, second).get("workspace", {}).get("stage") == "working", what="working")
    assert overlaps(daemon, first) == [] and overlaps(daemon, second) == []

    hub = daemon.client()
    hub.call("subscribe")
    edit_and_commit(daemon, second, tree_two, "src/app.txt", replace=("line 19\n", "line nineteen\n"))
    found = wait_overlaps(daemon, second, lambda found: found, "an overlap")
    # pushed to the hubs: the board's change and the feed's task event, why overlap
    heard = set()
    while heard != {"board", "overlap"}:
        message = hub.next_event()
        if message["event"] == "board":
            heard.add("board")
        if message["event"] == "feed" and message["entry"].get("why") == "overlap":
            assert message["entry"]["kind"] == "task" and "git predicts a clean merge" in message["entry"]["text"]
            heard.add("overlap")
    hub.close()
    assert found == [{"task": first, "files": ["src/app.txt"], "conflicts": []}]
    assert overlaps(daemon, first) == [{"task": second, "files": ["src/app.txt"], "conflicts": []}]
    listed = daemon.cli("task", "list")
    assert f"overlaps #{second} in src/app.txt: git predicts a clean merge" in listed.stdout.decode()


def test_an_overlap_ends_when_one_side_reverts_and_uncommitted_edits_count(daemon, tmp_path):
    _root, (first, tree_one, _job_one), (second, tree_two, _job_two) = two_tasks(daemon, tmp_path)
    edit_and_commit(daemon, first, tree_one, "src/app.txt", replace=("line 1\n", "line one\n"))
    # not committed: the worktree's status counts too
    write(os.path.join(tree_two, "src/app.txt"), LINES + "line 21\n")
    assert task_op(daemon, action="commit", id=second, message="x")["note"]       # committed now
    wait_overlaps(daemon, first, lambda found: found, "an overlap")

    git(tree_two, "revert", "--no-edit", "HEAD")
    task_op(daemon, action="commit", id=second)        # nothing to commit: the radar reads it all the same
    wait_overlaps(daemon, first, lambda found: found == [], "none")
    assert overlaps(daemon, second) == []


def test_a_holder_going_quiet_refreshes_what_its_worktree_touches(daemon, tmp_path):
    root = project_repo(tmp_path / "repo", files={"README": "a repository\n", "src/app.txt": LINES})
    first = task_op(daemon, action="add", title="First", project=root)["task"]["id"]
    second = task_op(daemon, action="add", title="Second", project=root)["task"]["id"]
    one, _job_one = prepared_and_started(daemon, first, name="alice")
    edit_and_commit(daemon, first, one["path"], "src/app.txt", replace=("line 1\n", "line one\n"))
    # the second's holder edits, then goes quiet: no commit, no action of the board; it
    # waits for its person (a holder that sleeps works on, issue 27)
    workspace = task_op(daemon, action="prepare", id=second)["workspace"]
    write(os.path.join(workspace["path"], "src/app.txt"), "line zero\n" + LINES)
    command = ["sh", "-c", "echo editing; sleep 1; echo done editing; read next; sleep 300"]
    task_op(daemon, action="start", id=second, launch={"kind": "shell", "cwd": workspace["path"], "command": command,
                                                       "env": {}, "name": "bob", "sessionFile": "",
                                                       "origin": "dispatch"})
    found = wait_overlaps(daemon, second, lambda found: found, "an overlap once bob is quiet")
    assert found[0]["task"] == first and found[0]["files"] == ["src/app.txt"]


OLD_GIT = """#!/bin/sh
# git as an older one would answer `git version`; everything else is the real git
for last; do :; done
if [ "$last" = version ]; then echo "git version 2.30.2"; exit 0; fi
exec {git} "$@"
"""


def test_an_old_git_without_merge_tree_write_tree_is_reported_not_crashed(home, tmp_path):
    real = git(str(tmp_path), "--exec-path")
    fake = tmp_path / "oldgit"
    fake.mkdir()
    script = fake / "git"
    script.write_text(OLD_GIT.format(git=os.path.join(real, "git")))
    script.chmod(stat.S_IRWXU)
    daemon = DaemonProcess(home, {"PATH": f"{fake}:{os.environ['PATH']}"}).start()
    try:
        _root, (first, tree_one, job_one), (second, tree_two, _job_two) = two_tasks(daemon, tmp_path)
        edit_and_commit(daemon, first, tree_one, "src/app.txt", replace=("line 3\n", "three\n"))
        edit_and_commit(daemon, second, tree_two, "src/app.txt", replace=("line 3\n", "3\n"))
        found = wait_overlaps(daemon, first, lambda found: found, "an overlap")
        assert found[0]["conflicts"] is None and "git 2.30 cannot predict conflicts" in found[0]["note"]
        wait_for(lambda: was_told(daemon, job_one, "git predicts nothing: git 2.30"), timeout=20,
                 what="the holder told git cannot say")
        assert daemon.call("ping")
    finally:
        daemon.stop()
    assert not tracebacks_in_log(home)


def test_claims_on_paths_are_an_overlap_from_the_start_and_go_with_the_claim(daemon, tmp_path):
    _root, (first, tree_one, job_one), (second, tree_two, job_two) = two_tasks(daemon, tmp_path)
    with speaker(daemon, job_two) as client:
        refused("unsupported", task_op, client, action="claim-paths", id=first, paths=["src/**"])
        refused("bad_request", task_op, client, action="claim-paths", id=second, paths=["../elsewhere"])
        refused("bad_request", task_op, client, action="claim-paths", id=second, paths=[f"f{n}" for n in range(51)])
        claimed = task_op(client, action="claim-paths", id=second, paths=["src/*.txt"])["task"]
        assert claimed["paths"] == {"globs": ["src/*.txt"], "by": {"who": "bob", "whoId": job_two}}
    # bob has edited nothing yet: alice's edit under his claim is an overlap already
    edit_and_commit(daemon, first, tree_one, "src/other.txt", text="alice's\n")
    found = wait_overlaps(daemon, first, lambda found: found, "an overlap with bob's claim")
    assert found[0]["task"] == second and found[0]["files"] == ["src/other.txt"]
    assert found[0]["conflicts"] is None and "a claim on paths: src/*.txt" in found[0]["note"]
    wait_for(lambda: was_told(daemon, job_one, f"Task #{second} (Second), held by bob"), timeout=20,
             what="alice told of bob's claim")

    # the claim goes with bob's claim of the task
    with speaker(daemon, job_two) as client:
        task_op(client, action="release", id=second)
    assert "paths" not in find(daemon, second)
    wait_overlaps(daemon, first, lambda found: found == [], "none once bob's claim went")


def test_a_person_says_where_a_task_will_work_and_releases_it(daemon, tmp_path):
    root = project_repo(tmp_path / "repo")
    added = daemon.cli("task", "add", "Docs", "--project", root, "--paths", "docs/**,README", "--json")
    assert added.returncode == 0, added.stderr
    task_id = find(daemon, 1)["id"]
    assert find(daemon, task_id)["paths"]["globs"] == ["docs/**", "README"]
    assert "paths: docs/**, README" in daemon.cli("task", "list").stdout.decode()
    claimed = daemon.cli("task", "claim-paths", str(task_id), "src/**,docs", "tests")
    assert claimed.returncode == 0, claimed.stderr
    assert find(daemon, task_id)["paths"]["globs"] == ["src/**", "docs", "tests"]
    assert daemon.cli("task", "release-paths", str(task_id)).returncode == 0
    assert "paths" not in find(daemon, task_id)
    refused("bad_request", task_op, daemon, action="release-paths", id=task_id)


def done_by_holder(daemon, job_id, task_id):
    with speaker(daemon, job_id) as client:
        task_op(client, action="done", id=task_id)


def test_the_train_puts_the_predicted_conflict_last_and_says_so_first(daemon, tmp_path):
    root = project_repo(tmp_path / "repo", files={"README": "a repository\n", "src/app.txt": LINES})
    ids, trees, jobs = [], {}, {}
    for name, (file_name, change) in zip(("a", "b", "c"), (("src/app.txt", ("line 3\n", "line 3 by a\n")),
                                                          ("b.txt", None),
                                                          ("src/app.txt", ("line 3\n", "line 3 by c\n")))):
        task_id = task_op(daemon, action="add", title=f"Task {name}", project=root)["task"]["id"]
        workspace, jobs[task_id] = prepared_and_started(daemon, task_id, name=f"worker-{name}")
        trees[task_id] = workspace["path"]
        if change is None:
            commit_file(trees[task_id], file_name, "b\n")
        else:
            edit_and_commit(daemon, task_id, trees[task_id], file_name, replace=change)
        done_by_holder(daemon, jobs[task_id], task_id)
        ids.append(task_id)
    first, second, third = ids
    before = git(root, "rev-parse", "main")

    dry = task_op(daemon, action="merge", train=[first, third, second], dry=True)
    assert dry["order"] == [first, second, third]
    assert dry["note"].splitlines() == [f"order: #{first}, #{second}, #{third}",
                                        f"#{third} goes last: git predicts a conflict with #{first} in src/app.txt"]
    assert git(root, "rev-parse", "main") == before            # a dry run lands nothing

    shown = daemon.cli("task", "merge", "--train", "--dry", str(first), str(third), str(second))
    assert shown.returncode == 0 and f"#{third} goes last" in shown.stdout.decode()

    out = daemon.cli("task", "merge", "--train", str(first), str(third), str(second))
    text = out.stdout.decode()
    assert out.returncode == 0, out.stderr
    # said before it starts, then each land: the two that merge cleanly land, the conflict last
    assert text.index(f"#{third} goes last") < text.index(f"#{first}: merged")
    assert f"#{second}: merged" in text and f"#{third}: syncing with main stopped on conflicts" in text
    stages = {task["id"]: (task.get("workspace") or {}).get("stage") for task in task_op(daemon, action="list")["tasks"]}
    assert stages == {first: "merged", second: "merged", third: "conflict"}


def test_globs_name_files_and_directories_and_never_leave_the_repository():
    from roost.board.path_claims import check_globs, matching

    files = {"src/a.txt", "src/sub/b.txt", "docs/x/y.md", "README", "srcx/c.txt"}
    assert matching(["src/*.txt"], files) == {"src/a.txt"}
    assert matching(["src"], files) == {"src/a.txt", "src/sub/b.txt"}        # a directory: all under it
    assert matching(["**/*.md", "README"], files) == {"docs/x/y.md", "README"}
    assert matching(["src/**/b.txt"], files) == {"src/sub/b.txt"}
    assert check_globs(["./src/", "src", "docs/**"]) == ["src", "docs/**"]
    for bad in ([], ["/etc/passwd"], ["a/../../b"], ["a\x1b[2J"], [""], "src", [f"f{n}" for n in range(51)]):
        refused("bad_request", check_globs, bad)


def test_a_merged_task_leaves_the_radar_and_the_others_overlaps(daemon, tmp_path):
    _root, (first, tree_one, job_one), (second, tree_two, _job_two) = two_tasks(daemon, tmp_path)
    edit_and_commit(daemon, first, tree_one, "src/app.txt", replace=("line 2\n", "line two\n"))
    edit_and_commit(daemon, second, tree_two, "src/app.txt", replace=("line 18\n", "line eighteen\n"))
    wait_overlaps(daemon, second, lambda found: found, "an overlap")
    done_by_holder(daemon, job_one, first)
    assert "merged into main" in task_op(daemon, action="merge", id=first)["note"]
    wait_overlaps(daemon, second, lambda found: found == [], "none once #1 is merged")
