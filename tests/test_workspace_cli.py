"""`roost task ...` for a task's worktree: start (which prepares), commit, done, diff,
comment, back, approve (what it shows is what it approves), merge alone and in a train,
cleanup's dry run, and --json printing exactly the op's result."""

import json
import os
import pty
import subprocess

from boardkit import project_repo, task_op, wait_stage
from conftest import PYTHON, wait_for
from gitkit import commit_file, git, isolated_git, read, sha, write  # noqa: F401


def cli(daemon, *argv):
    done = daemon.cli("task", *argv)
    assert done.returncode == 0, (argv, done.stdout, done.stderr)
    return done.stdout.decode()


def test_a_task_from_start_to_merge_on_the_command_line(daemon, tmp_path):
    root = project_repo(str(tmp_path / "repo"), verify="test -f notes.md")
    assert "#1 Write the notes" in cli(daemon, "add", "Write", "the", "notes", "--project", root)
    shown = cli(daemon, "approve", "1", "--dry")
    assert "verify: test -f notes.md" in shown
    digest = shown.split("hash: ")[1].split()[0]
    approved = cli(daemon, "approve", "1", "--hash", digest)
    assert "verify: test -f notes.md" in approved and "approved for" in approved
    started = cli(daemon, "start", "1", "--name", "writer", "sleep", "300")
    assert "#1 Write the notes: working" in started and "started " in started
    path = task_op(daemon, action="list")["tasks"][0]["workspace"]["path"]
    write(os.path.join(path, "notes.md"), "# notes\n")
    assert "committed " in cli(daemon, "commit", "1", "--message", "The notes")
    finished = cli(daemon, "done", "1")
    assert "verifying" in finished or "review (verified)" in finished     # a quick verify may be over
    wait_stage(daemon, 1, "review")
    shown = cli(daemon, "diff", "1")
    assert shown.startswith("# roost/t1-write-the-notes against main") and "+# notes" in shown
    cli(daemon, "comment", "1", "notes.md", "1", "a", "better", "title")
    listed = json.loads(cli(daemon, "list", "--json"))
    assert listed["tasks"][0]["workspace"]["comments"][0]["text"] == "a better title"
    assert "working" in cli(daemon, "back", "1", "--note", "see the comment")
    commit_file(path, "notes.md", "# The notes\n")
    cli(daemon, "done", "1")
    wait_stage(daemon, 1, "review")
    table = cli(daemon, "list")
    assert "#1  review" in table and "writer" in table
    merged = json.loads(cli(daemon, "merge", "1", "--no-ff", "--json"))
    assert merged["task"]["workspace"]["stage"] == "merged" and merged["task"]["workspace"]["merge"]["mode"] == "no-ff"
    assert read(os.path.join(root, "notes.md")) == "# The notes\n"
    # A merged worktree is removed just after the merge answers (roost.board.merging).
    wait_for(lambda: not os.path.exists(path), what="the merged worktree removed")
    lines = cli(daemon, "cleanup", "--dry").splitlines()
    assert len(lines) == 2 and all(line.startswith("remove the verify log of task #1") for line in lines)
    assert cli(daemon, "cleanup").splitlines() == lines
    assert cli(daemon, "cleanup", "--dry").strip() == "nothing to clean up"


def test_a_train_on_the_command_line_and_usage_refused(daemon, tmp_path):
    root = project_repo(str(tmp_path / "repo"))
    for number in (1, 2):
        cli(daemon, "add", f"Task {number}", "--project", root)
        cli(daemon, "start", str(number), "--name", f"w{number}", "--", "sleep", "300")
        path = task_op(daemon, action="list")["tasks"][number - 1]["workspace"]["path"]
        commit_file(path, f"t{number}.txt", f"{number}\n")
        cli(daemon, "done", str(number))
    out = cli(daemon, "merge", "--train", "1", "#2")
    assert "#1: merged into main" in out and "#2: merged into main" in out
    assert sha(root, "main") == git(root, "rev-parse", "HEAD")
    bad = daemon.cli("task", "merge", "--train", "one")
    assert bad.returncode == 2 and b"numbers" in bad.stderr
    refused = daemon.cli("task", "merge", "1")
    assert refused.returncode == 1 and b"bad_request" in refused.stderr


# -- approving is tied to what the person saw (issue 16) ---------------------------------

HIDING = "make test\r\x1b[2Kecho all is well"      # \r and an erase-line hide `make test` on a terminal


def test_approve_dry_shows_control_characters_and_hash_approves_only_what_was_shown(daemon, tmp_path):
    root = project_repo(str(tmp_path / "repo"), verify=HIDING)
    cli(daemon, "add", "Hidden", "--project", root)
    shown = cli(daemon, "approve", "1", "--dry")
    assert "verify: make test\\x0d\\x1b[2Kecho all is well" in shown
    assert "\x1b" not in shown and "\r" not in shown
    digest = shown.split("hash: ")[1].split()[0]
    assert f"roost task approve 1 --hash {digest}" in shown
    wrong = daemon.cli("task", "approve", "1", "--hash", "0" * 64)
    assert wrong.returncode == 1 and b"changed since they were shown" in wrong.stderr
    assert "not approved" in cli(daemon, "approve", "1", "--dry")
    assert "approved for" in cli(daemon, "approve", "1", "--hash", digest)
    assert "approved already" in cli(daemon, "approve", "1", "--dry")


def test_plain_approve_asks_at_a_terminal_and_is_refused_elsewhere(daemon, tmp_path):
    root = project_repo(str(tmp_path / "repo"), verify="test -f notes.md")
    cli(daemon, "add", "Asked", "--project", root)
    piped = daemon.cli("task", "approve", "1", input=b"y\n")
    assert piped.returncode == 2 and b"--dry" in piped.stderr and b"--hash" in piped.stderr
    assert "not approved" in cli(daemon, "approve", "1", "--dry")
    for answer, code, state in ((b"n\n", 1, "not approved"), (b"y\n", 0, "approved already")):
        master, slave = pty.openpty()
        try:
            process = subprocess.Popen([PYTHON, "-m", "roost", "task", "approve", "1"], env=daemon.env,
                                       stdin=slave, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            os.write(master, answer)
            _out, err = process.communicate(timeout=30)
        finally:
            os.close(master)
            os.close(slave)
        assert process.returncode == code, err
        assert b"verify: test -f notes.md" in err and b"Approve these commands? [y/N]" in err
        assert state in cli(daemon, "approve", "1", "--dry")
