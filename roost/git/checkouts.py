"""A task's worktree as roost knows it: where its files are and, from the repository's
own records, which git directory is its own.

A linked worktree's `.git` is a file in the worktree that says `gitdir: <path>`, and git
believes it: whatever can write the worktree (the task's agent) could point it at a
repository of its own making, whose config git then obeys (`core.fsmonitor` is a
program git runs on `status`; hooks, filters and diff drivers are more). So roost never
asks the worktree. Its git dir is found from the repository's common dir: the entry of
`worktrees/` whose `gitdir` file (written by `git worktree add`, outside the worktree)
names this worktree. Every run of git in it names `--git-dir` and `--work-tree`
(command.py), and before each run the worktree's `.git` is checked to still point
there: one that was replaced (another `gitdir:`, a link, a directory) is refused
(`GitError("tampered")`), never followed.

    place = checkout_of(repo, "/home/u/.local/state/roost/worktrees/r-1a2b/t7")
    place.git_dir          # "/src/r/.git/worktrees/t7"
    check(place)           # raises GitError("tampered") when its .git was changed
"""

import os
import stat
from dataclasses import dataclass

from roost.git.errors import GitError

MAX_LINK_BYTES = 4096       # a `.git` file is one line; anything longer is not git's


@dataclass(frozen=True)
class Checkout:
    """A worktree (`path`, resolved) and its git dir from the repository's record. It
    stands for its path wherever a path is taken (`os.fspath`, `os.path.join`)."""

    path: str
    git_dir: str
    main: bool = False      # the repository's main checkout (its git dir is the common dir)

    def __fspath__(self):
        return self.path

    def __str__(self):
        return self.path


def common_dir_of(place):
    """The repository's common dir, from where roost found the checkout's git dir
    (`<common>/worktrees/<name>`), never from the `commondir` file in it (check says
    whether that file still agrees)."""
    return place.git_dir if place.main else os.path.dirname(os.path.dirname(place.git_dir))


def checkout_of(repo, path):
    """The Checkout of `path`, a worktree of `repo` (its main checkout or a linked one),
    checked; GitError("not_found") when the repository has no worktree there, and
    GitError("tampered") when its `.git` no longer points where git recorded it."""
    if isinstance(path, Checkout):
        check(path)
        return path
    resolved = os.path.realpath(os.fspath(path))
    if not repo.bare and resolved == repo.root:
        found = Checkout(resolved, repo.common_dir, main=True)
    else:
        admin = _admin_dir_of(repo, resolved)
        if admin is None:
            raise GitError("not_found", f"{resolved} is no worktree of {repo.root}")
        found = Checkout(resolved, admin)
    check(found)
    return found


def _admin_dir_of(repo, resolved):
    linked = os.path.join(repo.common_dir, "worktrees")
    # git names the entry after the worktree's directory (with a number when taken): that
    # one is read first, every entry only when it is not the one
    first = os.path.basename(resolved)
    if _records(linked, first, resolved):
        return os.path.join(linked, first)
    try:
        names = sorted(os.listdir(linked))
    except OSError:
        return None
    for name in names:
        if name != first and _records(linked, name, resolved):
            return os.path.join(linked, name)
    return None


def _records(linked, name, resolved):
    recorded = read_small(os.path.join(linked, name, "gitdir"))
    return bool(recorded) and _same(os.path.dirname(recorded.strip()), resolved)


def _same(path, resolved):
    """Whether `path` names `resolved` (a resolved path): spelled exactly so (git's own
    spelling, the usual case: no system call), else once resolved as the kernel would
    (never by spelling alone: `x/../` through a link goes elsewhere)."""
    return path == resolved or os.path.realpath(path) == resolved


def check(place):
    """Raise GitError("tampered") unless the worktree's `.git` is still what git made: a
    plain file (not a link) whose `gitdir:` is its recorded git dir, or for the main
    checkout the common dir itself (a directory, or such a file: a submodule's checkout,
    `clone --separate-git-dir`)."""
    dot_git = os.path.join(place.path, ".git")
    try:
        info = os.lstat(dot_git)
    except FileNotFoundError:
        raise GitError("tampered", f"{place.path} has no .git any more (it was {place.git_dir}): refused") from None
    except OSError as error:
        raise GitError("tampered", f"{dot_git} cannot be read ({error.strerror}): refused") from None
    if place.main and stat.S_ISDIR(info.st_mode):
        if _same(dot_git, place.git_dir):
            return
        raise GitError("tampered", f"{dot_git} is not the repository's own git directory {place.git_dir}: refused")
    if not stat.S_ISREG(info.st_mode):
        kind = "a link" if stat.S_ISLNK(info.st_mode) else "not a file"
        raise GitError("tampered", f"{dot_git} is {kind} now, not the file git made pointing at {place.git_dir}: "
                       "roost runs no git there")
    said = read_small(dot_git, nofollow=True)
    target = said[len("gitdir:"):].strip() if said and said.startswith("gitdir:") else None
    if target is not None and not os.path.isabs(target):
        target = os.path.join(place.path, target)
    if target is None or not _same(target, place.git_dir):
        shown = (said or "").strip()[:200]
        raise GitError("tampered", f"{dot_git} no longer points where roost made it ({place.git_dir}); it says "
                       f"{shown!r}: roost runs no git there")
    _check_common(place)


def _check_common(place):
    """A linked worktree's git dir names its repository in `commondir`, and git follows
    it (for refs, whatever GIT_COMMON_DIR says): the worktree's agent may write that
    dir, so the file must still name the repository roost found it in."""
    if place.main:
        return                  # the repository's own git dir: no commondir in it
    common = common_dir_of(place)
    said = (read_small(os.path.join(place.git_dir, "commondir"), nofollow=True) or "").strip()
    if said and _same(os.path.join(place.git_dir, said), common):
        return
    raise GitError("tampered", f"{place.git_dir}/commondir no longer names the repository {common}; it says "
                   f"{said[:200]!r}: roost runs no git there")


def read_small(path, nofollow=False):
    """The start of a small file git wrote, or None. Opened without blocking and read only
    when it is a plain file: a fifo planted in its place would hold the daemon's loop."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK | (os.O_NOFOLLOW if nofollow else 0))
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return os.fsdecode(os.read(fd, MAX_LINK_BYTES))
    except OSError:
        return None
    finally:
        os.close(fd)
