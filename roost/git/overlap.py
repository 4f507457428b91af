"""What a task's worktree touches and whether two branches would merge: the git of the
overlap radar (roost.board.radar).

    touched = touched_files(repo, place, "main", "roost/t7-x")   # Touched(tip, files)
    found = predict_merge(repo, tip_a, tip_b)                    # Prediction(conflicts, note)

`touched_files` is two runs of git started together: `git diff --name-only base...tip`
in the repository (what the branch committed since it left base) and `git status
--porcelain` in the worktree through its Checkout (what is not committed yet). Both
read only; status takes no index lock (`--no-optional-locks`, repository.py).

`predict_merge` is `git merge-tree --write-tree --name-only --no-messages -z A B`: the
whole merge done in memory against the two commits' merge base, nothing written but
objects, exit 0 clean and 1 with the conflicted files listed after the tree. That form
came with git 2.38; an older git cannot say, and the prediction is `conflicts: None`
with a note saying so (never a failure of the caller).
"""

import re
from dataclasses import dataclass

from roost.git import command
from roost.git.errors import GitError
from roost.git.repository import require_sha, start_status

MERGE_TREE_SINCE = (2, 38)

_versions = {}      # PATH -> git's (major, minor), asked once per PATH


@dataclass(frozen=True)
class Touched:
    """The files a task's worktree changed against base, committed or not, and the
    branch tip the committed part was read at."""

    tip: str
    files: frozenset


@dataclass(frozen=True)
class Prediction:
    """What git predicts of merging two commits: `conflicts`, the files that would
    conflict ([] for a clean merge), or None when git cannot say (`note` says why)."""

    conflicts: list | None
    note: str | None = None


def touched_files(repo, place, base, branch, timeout=command.QUICK_S):
    """Touched(tip, files): the branch's changes since it left base, and the worktree's
    uncommitted ones (`place`, its Checkout; None for a task with no worktree now)."""
    base_sha, tip = require_sha(repo, base), require_sha(repo, branch)
    committed = command.start(["diff", "--name-only", "-z", "--no-relative", "--no-renames",
                               f"{base_sha}...{tip}", "--"], repo.root, timeout=timeout,
                              what="git diff --name-only")
    status = start_status(place, untracked=True, timeout=timeout) if place is not None else None
    files = set(committed.result().lines())
    if status is not None:
        files.update(path.rstrip("/") for _code, path in status.changes())
    return Touched(tip, frozenset(files))


def git_version(cwd):
    """git's (major, minor) as `git version` says it; (0, 0) when it says nothing readable."""
    environment = command.git_environ()
    key = environment.get("PATH", "")
    if key not in _versions:
        done = command.run(["version"], cwd, check=False, what="git version")
        found = re.search(r"(\d+)\.(\d+)", done.text())
        _versions[key] = (int(found.group(1)), int(found.group(2))) if found else (0, 0)
    return _versions[key]


def _sha(repo, commit):
    """A commit's sha as given (40 hex digits), or the ref's."""
    if isinstance(commit, str) and re.fullmatch(r"[0-9a-f]{40}", commit):
        return commit
    return require_sha(repo, commit)


def predict_merge(repo, one, other, timeout=command.QUICK_S):
    """Prediction of merging commit `other` into `one` (shas or refs)."""
    version = git_version(repo.root)
    if version < MERGE_TREE_SINCE:
        shown = ".".join(str(part) for part in version)
        return Prediction(None, f"git {shown} cannot predict conflicts (git merge-tree --write-tree needs "
                                f"{'.'.join(str(part) for part in MERGE_TREE_SINCE)} or newer)")
    done = command.run(["merge-tree", "--write-tree", "--name-only", "--no-messages", "-z",
                        _sha(repo, one), _sha(repo, other)], repo.root, check=False,
                       timeout=timeout, what="git merge-tree")
    if done.returncode == 0:
        return Prediction([])
    if done.returncode == 1:
        return Prediction(sorted(set(done.lines()[1:])))
    raise GitError("failed", "git merge-tree failed", done.argv, done.returncode, done.stderr)
