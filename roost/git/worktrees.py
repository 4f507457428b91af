"""Worktrees: add one for a branch, remove one without losing work, list and prune them,
delete a branch that is done with.

All through the git CLI. A checkout writes every file of the tree, which git does in C
with its index; dulwich would do it file by file in Python. Listing is git's too
(`git worktree list --porcelain`, 1.5 ms against dulwich's 0.24 ms) because whether a
worktree is prunable is git's own judgement (dulwich skips an entry whose gitdir file is
gone, which git calls prunable), and cleanup must agree with what `git worktree prune`
will do.

Adding, removing and pruning worktrees of one repository take turns (`_admin_lock`):
git removes `.git/worktrees` once its last entry goes, and a `worktree add` at that
moment fails with "could not create directory of '.git/worktrees/...'" (seen when a
merged task's worktree went while the next task's was being made).
"""

import os
import threading
import time
from dataclasses import dataclass

from roost.git import command
from roost.git.checkouts import checkout_of
from roost.git.errors import GitError
from roost.git.names import branch_ref, check_branch_name, short_branch
from roost.git.repository import (commits_ahead, describe_changes, is_ancestor, ref_sha, require_sha,
                                  uncommitted_changes)


@dataclass(frozen=True)
class Worktree:
    """One worktree as git lists it. `branch` has no `refs/heads/` (None: detached);
    `head` is None before the branch has a commit; `prunable` is git's reason for
    pruning it ("" when it would not)."""

    path: str
    branch: str | None
    head: str | None
    main: bool = False
    bare: bool = False
    locked: bool = False
    prunable: str = ""


def list_worktrees(repo):
    """Every worktree of the repository, the main checkout first."""
    done = command.run(["worktree", "list", "--porcelain", "-z"], repo.root, what="git worktree list")
    found = []
    record = {}
    for field in done.stdout.split(b"\0"):
        if field:
            key, _, value = field.partition(b" ")
            record[key.decode("ascii", "replace")] = os.fsdecode(value)
            continue
        if record:
            found.append(_worktree(record, main=not found))
            record = {}
    if record:
        found.append(_worktree(record, main=not found))
    return found


def _worktree(record, main):
    branch = record.get("branch")
    prunable = (record["prunable"] or "prunable") if "prunable" in record else ""
    return Worktree(path=record.get("worktree", ""), branch=short_branch(branch) if branch else None,
                    head=record.get("HEAD"), main=main, bare="bare" in record, locked="locked" in record,
                    prunable=prunable)


def find_worktree(repo, path):
    """The worktree at `path` (any spelling of it), or None."""
    wanted = os.path.realpath(path)
    for worktree in list_worktrees(repo):
        if os.path.realpath(worktree.path) == wanted or worktree.path == os.path.abspath(path):
            return worktree
    return None


def checked_out_at(repo, branch):
    """The path of the worktree where `branch` is checked out, or is being rebased or
    bisected (git refuses to move a branch in either state, and so does roost), else
    None. A worktree whose directory is gone still holds its branch until pruned.

    Read from each worktree's own git dir (its HEAD, its rebase and bisect state), as
    git's find_shared_symref does: 0.1 ms against 1.8 ms for `git worktree list`, and
    a land asks it every time. A repository whose refs are not files (reftable) keeps
    HEAD elsewhere: then it is git's list after all."""
    ref = branch_ref(branch)
    for admin, path, main in _admin_dirs(repo):
        head = _read(os.path.join(admin, "HEAD"))
        if head == "ref: refs/heads/.invalid":
            return _checked_out_by_list(repo, ref)
        if (head == "ref: " + ref and not (main and repo.bare)) or _busy_with(admin) in (ref, short_branch(ref)):
            return path
    return None


def _checked_out_by_list(repo, ref):
    for worktree in list_worktrees(repo):
        if worktree.branch is not None and "refs/heads/" + worktree.branch == ref:
            return worktree.path
    return None


def _admin_dirs(repo):
    """(git dir, worktree path, main?) of each worktree: the main one, `worktrees/*`."""
    yield repo.common_dir, repo.root, True
    linked = os.path.join(repo.common_dir, "worktrees")
    try:
        names = sorted(os.listdir(linked))
    except OSError:
        return
    for name in names:
        admin = os.path.join(linked, name)
        gitdir = _read(os.path.join(admin, "gitdir"))
        yield admin, os.path.dirname(gitdir) if gitdir else admin, False


def _read(path):
    try:
        with open(path, "rb") as handle:
            return os.fsdecode(handle.read().strip())
    except OSError:
        return None


def _busy_with(admin):
    """The branch a rebase or bisect in this git dir works on (as git wrote it), or None."""
    for name in ("rebase-merge/head-name", "rebase-apply/head-name", "BISECT_START"):
        found = _read(os.path.join(admin, name))
        if found:
            return found
    return None


_admin_locks = {}      # a repository's common dir -> its lock, made on first use (after
                       # the daemon's patching, so a waiting greenlet does not hold the loop)


def _admin_lock(repo):
    return _admin_locks.setdefault(repo.common_dir, threading.Lock())


def add_worktree(repo, path, branch, base=None, timeout=command.WORK_S):
    """A new worktree at `path` (absent or an empty directory) with `branch` checked out.

    With `base` (a branch name or ref), `branch` is made there first and must not exist
    (GitError "exists"); without it, `branch` must exist and be checked out nowhere (a
    shelved task's branch, made into a worktree again). Returns its Worktree."""
    ref = branch_ref(branch)
    path = os.path.abspath(path)
    if os.path.lexists(path) and not (os.path.isdir(path) and not os.listdir(path)):
        raise GitError("exists", f"{path} exists and is not an empty directory")
    if base is not None:
        start = require_sha(repo, base)
        if ref_sha(repo, ref) is not None:
            raise GitError("exists", f"branch {short_branch(ref)} exists already")
        # The sha, not base's name: the branch starts exactly where the caller was told.
        args = ["worktree", "add", "--quiet", "--no-track", "-b", short_branch(ref), "--", path, start]
    else:
        start = require_sha(repo, ref)
        holder = checked_out_at(repo, ref)
        if holder is not None:
            raise GitError("checked_out", f"branch {short_branch(ref)} is checked out at {holder}")
        args = ["worktree", "add", "--quiet", "--", path, short_branch(ref)]
    # Made here, empty, so a jailed run may be given it to write (git takes an empty one).
    os.makedirs(path, exist_ok=True)
    with _admin_lock(repo):
        command.run(args, repo.root, timeout=timeout, what="git worktree add", writes=(path,))
    return Worktree(path=os.path.realpath(path), branch=short_branch(ref), head=start)


def remove_worktree(repo, path, base=None, force=False, timeout=command.WORK_S):
    """Remove a worktree (never the main checkout). Unless `force`, it is refused while
    the worktree has uncommitted or untracked changes ("dirty"), or, with `base`, while
    its branch has commits that `base` does not ("unmerged"). The branch itself stays (a
    shelved task keeps it): `delete_branch` removes it. A worktree whose directory is
    gone is removed from git's list all the same. A locked worktree is refused by git
    even when forced: someone locked it on purpose."""
    worktree = find_worktree(repo, path)
    if worktree is None:
        raise GitError("not_found", f"no worktree of {repo.root} at {path}")
    if worktree.main:
        raise GitError("checked_out", f"{worktree.path} is the main checkout, not a worktree roost removes")
    if not force:
        if os.path.isdir(worktree.path):
            # its status through the repository's record: a tampered .git is refused
            changes = uncommitted_changes(checkout_of(repo, worktree.path))
            if changes:
                raise GitError("dirty", f"{worktree.path} has uncommitted changes ({describe_changes(changes)})")
        if base is not None and worktree.branch is not None:
            _refuse_unmerged(repo, worktree.branch, base)
        _refuse_nested(repo, worktree.path)
    # --force always: the checks above are git's own, less the one it would make with
    # `status --ignore-submodules=none`, which runs git in each nested repository with
    # that repository's config (lockdown.py).
    args = ["worktree", "remove", "--force", "--", worktree.path]
    with _admin_lock(repo):
        command.run(args, repo.root, timeout=timeout, what="git worktree remove")


def _refuse_nested(repo, path):
    """git's own rule, kept: a worktree holding a repository of its own (a submodule's
    checkout) is not removed; its work is not looked into."""
    if not os.path.isdir(path):
        return
    place = checkout_of(repo, path)
    listed = command.run(["ls-files", "--stage", "-z"], place, what="git ls-files --stage")
    for entry in listed.stdout.split(b"\0"):
        mode, _space, rest = entry.partition(b" ")
        if mode == b"160000" and b"\t" in rest:
            nested = os.path.join(path, os.fsdecode(rest.split(b"\t", 1)[1]))
            if os.path.isdir(os.path.join(nested, ".git")):
                raise GitError("dirty", f"{path} holds a repository of its own at {nested}: roost does not "
                               "remove it (git worktree remove would not either)")


def _refuse_unmerged(repo, branch, base):
    tip = ref_sha(repo, branch)
    if tip is not None and not is_ancestor(repo.root, tip, require_sha(repo, base)):
        count = commits_ahead(repo, branch, base)
        raise GitError("unmerged", f"branch {branch} has {count} commit{'s' if count != 1 else ''} "
                       f"not merged into {short_branch(base)}")


def prune_worktrees(repo, dry=False):
    """The worktrees git would prune (their directory is gone), pruned unless `dry`."""
    prunable = [worktree for worktree in list_worktrees(repo) if worktree.prunable]
    if prunable and not dry:
        with _admin_lock(repo):
            command.run(["worktree", "prune"], repo.root, what="git worktree prune")
    return prunable


def delete_branch(repo, branch, base=None, force=False):
    """Delete a branch checked out nowhere. Unless `force`, with `base`, refused while it
    has commits `base` does not. The delete is a compare-and-swap (`git update-ref -d
    <ref> <sha>`): a branch that moved since it was checked is left alone ("moved")."""
    ref = branch_ref(branch)
    check_branch_name(short_branch(ref))
    tip = require_sha(repo, ref)
    holder = checked_out_at(repo, ref)
    if holder is not None:
        raise GitError("checked_out", f"branch {short_branch(ref)} is checked out at {holder}")
    if not force and base is not None:
        _refuse_unmerged(repo, short_branch(ref), base)
    done = command.run(["update-ref", "-d", ref, tip], repo.root, check=False, what="git update-ref -d")
    if done.returncode != 0:
        if ref_sha(repo, ref) not in (None, tip):
            raise GitError("moved", f"branch {short_branch(ref)} moved while it was being deleted",
                           done.argv, done.returncode, done.stderr)
        raise GitError("failed", "git update-ref -d failed", done.argv, done.returncode, done.stderr)


def wait_until_idle(repo, timeout=10.0, poll=0.05):
    """Wait (cooperatively, polling) until no git holds an index lock in any worktree
    of the repository: a git started by a process that was killed runs on in a session
    of its own, and what it leaves is only judged once it is done. True when idle,
    False when a lock was still there at the deadline (a stale one, left by a crash)."""
    deadline = time.monotonic() + timeout
    while True:
        held = [admin for admin, _path, _main in _admin_dirs(repo) if os.path.exists(os.path.join(admin, "index.lock"))]
        if not held:
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(poll)
