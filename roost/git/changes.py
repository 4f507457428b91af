"""Work in a task's worktree: commit it, sync it with base, and the diff a person reviews.

Commit and sync are the git CLI's: git's status trusts the index's stat data where
dulwich hashes every file in Python (18 ms against 294 ms for a status of 10,000 files),
and a merge must leave git's own conflict markers and state for an agent to resolve. No
hook runs, and nothing the repository's config or attributes name (command.py). Staging
is `git status` then `git update-index`, not `git add -A`: add looks inside a nested
repository (a submodule's `git status`, with that repository's own config and none of
roost's settings), where the status roost asks for reads only its HEAD. The diff is git's for the
same reason: its rename detection and binary handling are what a person knows (for the
list of changed files `git diff --name-status` took 1.8 ms, dulwich's merge base and tree
diff 2.7 ms). Reading a worktree's HEAD is dulwich's (0.2 ms against 1.3 ms): it blocks,
so it goes through the seam. A linked worktree is read and run through its Checkout
(checkouts.py): its own `.git` file is never followed, by dulwich or by git.
"""

import os
from dataclasses import dataclass, field

from roost import blocking
from roost.git import checkouts, command
from roost.git.errors import GitError
from roost.git.names import branch_ref, short_branch
from roost.git.repository import describe_changes, is_ancestor, require_sha, uncommitted_changes

DIFF_MAX_BYTES = 8 * 2**20
DEFAULT_MESSAGE = "Work of a roost task"


def worktree_head(worktree):
    """(branch or None when detached, head sha or None before a first commit, whether a
    merge is in progress) of a worktree. Blocks (dulwich)."""
    return blocking.call(_worktree_head, worktree)


def _worktree_head(worktree):
    from dulwich.errors import NotGitRepository
    from dulwich.repo import Repo

    try:
        if isinstance(worktree, checkouts.Checkout):
            checkouts.check(worktree)
            repository = Repo(controldir=worktree.git_dir, worktree=worktree.path)
        else:
            command.refuse_linked(os.fspath(worktree), "reading HEAD")
            repository = Repo(os.fspath(worktree))
    except (NotGitRepository, FileNotFoundError, NotADirectoryError):
        raise GitError("not_found", f"{worktree} is not a worktree") from None
    with repository:
        chain, sha = repository.refs.follow(b"HEAD")
        merging = os.path.exists(os.path.join(repository.controldir(), "MERGE_HEAD"))
    branch = None
    if len(chain) > 1 and chain[1].startswith(b"refs/heads/"):
        branch = os.fsdecode(chain[1][len(b"refs/heads/"):])
    return branch, sha.decode("ascii") if sha else None, merging


def unmerged_paths(worktree):
    """The paths a stopped merge left in conflict."""
    done = command.run(["diff", "--name-only", "--diff-filter=U", "--ignore-submodules=dirty", "--no-ext-diff",
                        "--no-textconv", "-z"], worktree, what="git diff --diff-filter=U")
    return done.lines()


def stage_all(worktree, timeout=command.WORK_S):
    """Stage everything the worktree holds, as `git add -A` would: changed, deleted and
    new files (ignored ones not), a nested repository as its HEAD commit (a gitlink)."""
    listed = command.run(["status", "--porcelain=v1", "-z", "--untracked-files=all", "--ignore-submodules=dirty",
                          "--no-renames"], worktree, timeout=timeout, what="git status")
    paths = []
    for entry in listed.stdout.split(b"\0"):
        if len(entry) < 4:
            continue
        code = entry[:2]
        if code[1:2] != b" " or b"U" in code or code in (b"DD", b"AA"):
            paths.append(entry[3:].rstrip(b"/"))      # `sub/`: an untracked nested repository
    if paths:
        command.run(["update-index", "--add", "--remove", "-z", "--stdin"], worktree, timeout=timeout,
                    input=b"\0".join(paths) + b"\0", what="git update-index")


def _with_markers(worktree, paths):
    """The paths in conflict whose file still holds git's conflict markers (a file
    resolved by hand but not staged is resolved: `add -A` stages it)."""
    marked = []
    for path in paths:
        try:
            with open(os.path.join(worktree, path), "rb") as handle:
                data = handle.read()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            continue
        lines = data.split(b"\n")
        if any(line.startswith(b"<<<<<<< ") for line in lines) and any(line.startswith(b">>>>>>> ") for line in lines):
            marked.append(path)
    return marked


def commit_all(worktree, message=None, timeout=command.WORK_S):
    """Commit everything the worktree holds (stage_all, then `git commit`), with the
    user's identity and no hook; returns the new commit's sha, or None when there was
    nothing to commit. A merge whose conflicts are resolved is concluded by it; one whose
    files still hold conflict markers is refused ("conflict"): `add -A` would commit them."""
    _branch, _head, merging = worktree_head(worktree)
    if merging:
        marked = blocking.call(_with_markers, worktree, unmerged_paths(worktree))
        if marked:
            raise GitError("conflict", f"the sync's conflicts are not resolved ({', '.join(marked[:5])}):"
                           " resolve them or abort the sync")
    stage_all(worktree, timeout)
    staged = command.run(["diff", "--cached", "--quiet", "--ignore-submodules=dirty"], worktree, check=False,
                         what="git diff --cached")
    if staged.returncode == 0 and not merging:
        return None
    text = (message or "").strip() or DEFAULT_MESSAGE
    try:
        command.run(["commit", "--quiet", "--no-verify", "--file=-"], worktree, timeout=timeout,
                    input=text.encode("utf-8"), what="git commit")
    except GitError as error:
        command.raise_commit_failure(error, worktree, "git commit")
    return command.run(["rev-parse", "--verify", "HEAD"], worktree).text().strip()


@dataclass(frozen=True)
class SyncResult:
    """How a sync went. `outcome`: "merged" (head moved: a merge commit, or a fast
    forward), "up_to_date" (base is in the branch already), "conflict" (the merge
    stopped; `conflicts` lists the paths, the worktree is mid-merge until resolved and
    committed, or aborted) or "refused" (uncommitted changes; `detail` names them).
    `head` is the branch's commit afterwards, `base` the commit of base merged, `before`
    the branch's commit the sync started from."""

    outcome: str
    head: str | None
    base: str
    conflicts: list = field(default_factory=list)
    detail: str = ""
    before: str | None = None


def sync_with_base(repo, worktree, base, timeout=command.WORK_S):
    """Merge base into the branch checked out in `worktree` (`git merge`), the way a
    person brings a branch up to date before it lands."""
    base_ref = branch_ref(base)
    base_sha = require_sha(repo, base_ref)
    branch, head, merging = worktree_head(worktree)
    if branch is None:
        raise GitError("not_found", f"{worktree} has no branch checked out (its HEAD is detached)")
    changes = uncommitted_changes(worktree)
    if merging or changes:
        return SyncResult("refused", head, base_sha, detail="uncommitted changes: " + describe_changes(changes)
                          if changes else "a merge is in progress")
    if head is not None and is_ancestor(worktree, base_sha, head):
        return SyncResult("up_to_date", head, base_sha)
    # --ff and --no-autostash whatever the user's merge.ff / merge.autoStash say: a sync
    # may fast-forward, and never stashes (a dirty worktree is refused above).
    args = [*command.nested_left_alone(worktree), "merge", "--quiet", "--no-edit", "--no-verify", "--no-stat", "--ff",
            "--no-autostash",
            "-m", f"Merge branch '{short_branch(base_ref)}' into {branch}", base_sha]
    done = command.run(args, worktree, timeout=timeout, check=False, what="git merge")
    if done.returncode == 0:
        return SyncResult("merged", worktree_head(worktree)[1], base_sha, before=head)
    _branch, _head, merging = worktree_head(worktree)
    if merging:
        return SyncResult("conflict", head, base_sha, conflicts=unmerged_paths(worktree), detail=done.stderr.strip())
    command.raise_commit_failure(GitError("failed", "git merge failed", done.argv, done.returncode, done.stderr),
                                 worktree, "git merge")


def abort_sync(worktree, timeout=command.WORK_S):
    """Give up a sync stopped on conflicts (`git merge --abort`): the worktree is back
    where it was before it. False when no merge was in progress."""
    if not worktree_head(worktree)[2]:
        return False
    command.run(["merge", "--abort"], worktree, timeout=timeout, what="git merge --abort")
    return True


# -- what a person reviews --------------------------------------------------------------

# A diff for reading, the same whatever the user's diff settings: no colour, external
# diff tools or text conversions, standard a/ b/ prefixes, paths as they are.
_DIFF_OPTIONS = ["--no-color", "--no-ext-diff", "--no-textconv", "--no-relative", "-M",
                 "--src-prefix=a/", "--dst-prefix=b/"]


@dataclass(frozen=True)
class Diff:
    """A branch's diff against base: `text` (cut at `max_bytes`: `truncated`), and the
    two commits it is between (base's side is their merge base)."""

    text: str
    truncated: bool
    base: str
    tip: str


def diff(repo, base, branch, max_bytes=DIFF_MAX_BYTES, timeout=command.QUICK_S):
    """What the branch changed since it left base (`git diff base...branch`): the
    task's own work, not what base gained since."""
    base_sha, tip = require_sha(repo, base), require_sha(repo, branch)
    done = command.run(["-c", "core.quotePath=false", "diff", *_DIFF_OPTIONS, f"{base_sha}...{tip}", "--"],
                       repo.root, timeout=timeout, max_output=max_bytes, what="git diff")
    return Diff(done.stdout.decode("utf-8", "replace"), done.truncated, base_sha, tip)


@dataclass(frozen=True)
class ChangedFile:
    """One file of a branch's diff: `status` is git's letter (A, M, D, R, C, T),
    `old_path` the name it had before a rename or copy."""

    status: str
    path: str
    old_path: str | None = None


def changed_files(repo, base, branch, timeout=command.QUICK_S):
    """The files the branch changed since it left base."""
    base_sha, tip = require_sha(repo, base), require_sha(repo, branch)
    done = command.run(["diff", "--name-status", "-z", "--no-relative", "-M", f"{base_sha}...{tip}", "--"],
                       repo.root, timeout=timeout, what="git diff --name-status")
    fields = done.lines()
    found = []
    index = 0
    while index < len(fields):
        status = fields[index][:1]
        if status in ("R", "C"):
            found.append(ChangedFile(status, fields[index + 2], fields[index + 1]))
            index += 3
        else:
            found.append(ChangedFile(status, fields[index + 1]))
            index += 2
    return found
