"""Landing a branch on base, locally, under a lock held per repository.

A land moves base to the branch's tip (`ff`) or to a merge commit of the two (`no-ff`),
and only ever with one compare-and-swap, `git update-ref refs/heads/<base> <new> <old>`:
the ref moves only if it is still where the land read it, and git's lock file makes the
move itself atomic. So whatever is killed when, base is at its old commit or the new
one, never a third.

The steps, each a `_reached(step)` point the kill tests stop the process at:

1. take the lock: flock on `roost-land.lock` in the repository's git common dir (two
   daemons, or two greenlets of one, never interleave; the kernel drops a dead holder's
   lock, so there is nothing stale to clean up). Polled, so a waiting greenlet does not
   hold the event loop;
2. set right what an interrupted land left (land_repair), then read base and the branch:
   the branch must hold base's tip (synced), or the land is refused as `not_synced`;
3. `no-ff`: write the merge commit (`git commit-tree`: its tree is the branch's, which
   holds base already), touching no worktree;
4. where base is checked out (the main checkout, or any worktree), the land is written
   into the lock file (what it moves, from and to), then that checkout is brought from
   the old commit to the new one (`git read-tree -m -u`, git's two-tree fast-forward,
   which is `git merge --ff-only`'s own check: it refuses, before it writes a file, when
   any file the land changes has uncommitted changes or an untracked file stands where
   it would write one; a person's edits to other files stay as they are, as with `git
   merge`);
5. move the ref (the compare-and-swap); 6. clear the lock file's record.

A kill between 4 and 6 leaves a checkout that disagrees with its ref; the record in the
lock file lets the next land (or `recover_land`) set it right, file by file, and only
where each file is provably what roost wrote (land_repair).

By hand a person would run `git merge --ff-only` or `--no-ff` in the main checkout; that
does the same work in one process, but moves the checkout's files and its ref with no
record between, and offers no swap for base checked out nowhere. A status of the whole
checkout first (10,000 lstat calls, 14 ms on bench/git.py's repository) would refuse
more than git does, and for files the land never touches; the record and the repair
only ever concern the files that differ between the two commits.
bench/git.py measures land against `git merge` on a repository of 10,000 files.
"""

import fcntl
import json
import logging
import os
import time
from dataclasses import dataclass

from roost.git import command, land_repair
from roost.git.changes import worktree_head
from roost.git.checkouts import checkout_of
from roost.git.errors import GitError
from roost.git.names import branch_ref, short_branch
from roost.git.repository import how_related, ref_sha, require_sha
from roost.git.worktrees import checked_out_at

log = logging.getLogger(__name__)

LOCK_NAME = "roost-land.lock"
LOCK_WAIT_S = 120.0
LOCK_POLL_S = 0.02
MODES = ("ff", "no-ff")


def _reached(step):
    """A land passed `step`. Does nothing: the kill tests replace it to end the process
    exactly there."""


@dataclass(frozen=True)
class LandResult:
    """How a land went: `outcome` "landed" or "up_to_date" (the branch is in base
    already); base's commit before (`old`) and after (`new`); `checkout`, the worktree
    where base is checked out and that was brought along (None: base is checked out
    nowhere and only its ref moved); `repaired`, what an interrupted land had left and
    this one set right first ("" when nothing)."""

    outcome: str
    mode: str
    old: str
    new: str
    checkout: str | None = None
    repaired: str = ""


class RepositoryLock:
    """The land lock of one repository, with the record of a land in progress.

    The lock file holds one JSON line: the holder's pid and, while a land changes a
    checkout, what it moves (like roost.unix.pidlock's lock files, which hold their
    holder's pid). The record is written, and fsynced, before any file of the checkout
    changes, so it is there for whoever takes the lock next."""

    def __init__(self, repo, timeout=LOCK_WAIT_S):
        self.path = os.path.join(repo.common_dir, LOCK_NAME)
        self.timeout = timeout
        self.fd = None
        self.previous = None

    def __enter__(self):
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        deadline = time.monotonic() + self.timeout
        waited = False
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if not waited:
                        waited = True
                        _reached("waiting_for_lock")
                    if time.monotonic() > deadline:
                        raise GitError("busy", f"another land holds {self.path} "
                                       f"({self._holder(fd)}) after {self.timeout:g} s") from None
                    time.sleep(LOCK_POLL_S)     # cooperative under gevent's patching
            self.previous = self._read(fd).get("landing")
            self.fd = fd
            self._write({"pid": os.getpid(), "landing": self.previous})
        except BaseException:
            os.close(fd)
            self.fd = None
            raise
        return self

    def __exit__(self, *exc):
        os.close(self.fd)           # the kernel drops the lock with the last descriptor
        self.fd = None

    @staticmethod
    def _read(fd):
        data = os.pread(fd, 65536, 0)
        try:
            value = json.loads(data.decode("utf-8")) if data.strip() else {}
        except ValueError:
            log.warning("unreadable land lock file contents: %r", data[:200])
            return {}
        return value if isinstance(value, dict) else {}

    def _holder(self, fd):
        pid = self._read(fd).get("pid")
        return f"pid {pid}" if pid else "a process"

    def _write(self, value, durable=False):
        # Truncate first: a kill in between leaves an empty file (no record), never a
        # mix of two; a record is only relied on once this returned.
        data = json.dumps(value, separators=(",", ":")).encode("utf-8") + b"\n"
        os.ftruncate(self.fd, 0)
        os.pwrite(self.fd, data, 0)
        if durable:
            os.fsync(self.fd)

    def landing(self):
        """The record of a land that did not finish (a dict), or None."""
        return self.previous

    def record(self, landing):
        self.previous = landing
        self._write({"pid": os.getpid(), "landing": landing}, durable=True)

    def clear(self):
        self.previous = None
        self._write({"pid": os.getpid(), "landing": None})


def land(repo, branch, base, mode="ff", message=None, lock_timeout=LOCK_WAIT_S, timeout=command.WORK_S, tip=None):
    """Land `branch` on `base` (both branch names) in `repo`; returns a LandResult. With
    `tip` (a sha: the commit that was verified and reviewed), exactly that commit lands:
    a branch found elsewhere under the lock is refused (`unverified`), and what lands is
    the commit read there, whatever the branch does afterwards.

    Refused (GitError): `not_synced` when the branch does not hold base's tip (sync it
    first), `dirty` when base's checkout has uncommitted changes to a file the land
    changes (or an untracked file where the land would write one), `busy` when base is
    being rebased or bisected, or another land holds the lock past `lock_timeout`,
    `moved` when base moved under the swap (nothing landed), `no_identity` for a merge
    commit without an identity."""
    if mode not in MODES:
        raise GitError("bad_request", f"unknown land mode {mode!r} (ff or no-ff)")
    branch_name, base_name = short_branch(branch_ref(branch)), short_branch(branch_ref(base))
    with RepositoryLock(repo, lock_timeout) as lock:
        _reached("locked")
        repaired = land_repair.repair(repo, lock)
        checkout = _checkout_of(repo, base_name)
        old = require_sha(repo, base_name)
        found = require_sha(repo, branch_name)
        if tip is not None and found != tip:
            raise GitError("unverified", f"{branch_name} moved since it was verified and reviewed "
                           f"({tip[:12]} -> {found[:12]}): nothing landed")
        tip = found
        relation = how_related(repo.root, old, tip)
        if relation == "contained":
            return LandResult("up_to_date", mode, old, old, repaired=repaired)
        if relation != "ahead":
            raise GitError("not_synced", f"{branch_name} does not hold {base_name}'s tip {old[:12]}: "
                           "sync it with base first")
        new = tip if mode == "ff" else _merge_commit(repo, old, tip, message or
                                                     f"Merge branch '{branch_name}' into {base_name}")
        _reached("merge_commit_written")
        if checkout is not None:
            lock.record({"base": base_name, "old": old, "new": new, "checkout": checkout.path})
            _reached("recorded")
            _update_checkout(checkout, base_name, old, new, lock, timeout)
            _reached("checkout_updated")
        _move_ref(repo, base_name, old, new, f"roost: land {branch_name} ({mode})", lock)
        _reached("ref_moved")
        if checkout is not None:
            lock.clear()
        return LandResult("landed", mode, old, new, checkout and checkout.path, repaired)


def recover_land(repo, lock_timeout=LOCK_WAIT_S):
    """Set right what a land killed half-way left (the next land does it too); what was
    done, "" when nothing. The daemon may call it for each repository at start."""
    with RepositoryLock(repo, lock_timeout) as lock:
        return land_repair.repair(repo, lock)


def _checkout_of(repo, base):
    """The worktree where base is checked out and can be moved along (read-tree checks
    the files the land changes), or None when it is checked out nowhere."""
    path = checked_out_at(repo, base)
    if path is None:
        return None
    if not os.path.isdir(path):
        raise GitError("checked_out", f"{base} is checked out at {path}, which is gone: "
                       "`git worktree prune` first")
    place = checkout_of(repo, path)
    branch, _head, merging = worktree_head(place)
    if branch != base or merging:
        raise GitError("busy", f"{base} is being rebased, bisected or merged at {path}")
    return place


def _merge_commit(repo, old, tip, message):
    args = ["commit-tree", f"{tip}^{{tree}}", "-p", old, "-p", tip, "-F", "-"]
    try:
        done = command.run(args, repo.root, input=message.encode("utf-8"), what="git commit-tree")
    except GitError as error:
        command.raise_commit_failure(error, repo.root, "the merge commit")
    return done.text().strip()


def _update_checkout(checkout, base, old, new, lock, timeout):
    args = ["read-tree", "-m", "-u", old, new]
    done = command.run(args, checkout, timeout=timeout, check=False, what="git read-tree -m -u")
    if done.returncode != 0:
        # read-tree trusts the index's stat data: a file touched but not changed (a
        # build's, an editor's) looks changed until the index is refreshed, as `git
        # status` or `git merge` would; only then is a refusal git's last word.
        command.run(["update-index", "-q", "--refresh"], checkout, timeout=timeout, check=False,
                    what="git update-index --refresh")
        done = command.run(args, checkout, timeout=timeout, check=False, what="git read-tree -m -u")
    if done.returncode != 0:
        # read-tree checks every file before it writes one: nothing changed.
        lock.clear()
        raise GitError("dirty", f"{base} is checked out at {checkout} with changes the land would overwrite "
                       "(commit or stash them first)", done.argv, done.returncode, done.stderr)


def _move_ref(repo, base, old, new, reason, lock):
    done = command.run(["update-ref", "-m", reason, "refs/heads/" + base, new, old], repo.root, check=False,
                       what="git update-ref")
    if done.returncode == 0:
        return
    now = ref_sha(repo, base)
    if lock.landing() is not None:
        land_repair.repair(repo, lock, target=old)      # undo what this land wrote there
    if now != old:
        raise GitError("moved", f"{base} moved to {str(now)[:12]} while it was landed on; nothing landed",
                       done.argv, done.returncode, done.stderr)
    raise GitError("failed", "git update-ref failed", done.argv, done.returncode, done.stderr)
