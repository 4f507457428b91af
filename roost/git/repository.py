"""A repository and what is asked of it: where it is, its refs, whether a worktree is
clean, whether one branch is merged into another.

Which tool does what, by what it costs (bench/git.py's machine, a repository of 10,000
files and 300 commits; a run of git is a fork and exec of ~1.3 ms before it does
anything):

- where a directory's repository is, the main checkout's branch, a ref's sha: dulwich
  (0.2 ms against 1.3-1.4 ms for `git rev-parse` / `git symbolic-ref`). They read a few
  small files, and dulwich reads packed refs and reftable as git does. These block: they
  go through `blocking.call`.
- whether a worktree is clean: `git status` (18 ms against dulwich's 294 ms: git trusts
  the index's stat data, dulwich hashes files in Python).
- whether a branch is merged: `git merge-base --is-ancestor` (5.6 ms against 21 ms for
  dulwich's walk when the answer lies 300 commits back; git uses its commit-graph and
  generation numbers, so it stays flat on long histories where a Python walk does not).
"""

import os
from dataclasses import dataclass

from roost import blocking
from roost.git import command
from roost.git.errors import GitError
from roost.git.names import branch_ref, check_branch_name


@dataclass(frozen=True)
class Repository:
    """A repository: `root` is its main checkout's top directory (a bare repository's
    own directory), `common_dir` the git directory every worktree of it shares (refs,
    objects, roost's land lock). Paths are absolute and resolved, so two directories of
    one repository, or two of its worktrees, give equal Repository values."""

    root: str
    common_dir: str
    bare: bool = False


def repository_of(directory):
    """The Repository holding `directory` (a linked worktree counts as its repository),
    or None when it is in none. Blocks (dulwich): through the seam."""
    return blocking.call(_discover, os.fspath(directory))


def _discover(directory):
    from dulwich.errors import NotGitRepository
    from dulwich.repo import Repo

    try:
        found = Repo.discover(directory)
    except (NotGitRepository, FileNotFoundError, NotADirectoryError):
        return None
    with found:
        common = os.path.realpath(found.commondir())
        if os.path.realpath(found.controldir()) == common:
            return Repository(os.path.realpath(found.path), common, bool(found.bare))
    return _main_of(common)


def _main_of(common):
    """The main checkout of the common dir a linked worktree points at."""
    from dulwich.repo import Repo

    with Repo(controldir=common) as main:
        if os.path.realpath(main.path) != common:          # core.worktree names it
            return Repository(os.path.realpath(main.path), common, False)
        bare = main.get_config().get_boolean((b"core",), b"bare", False)
    if not bare and os.path.basename(common) == ".git":
        return Repository(os.path.dirname(common), common, False)
    return Repository(common, common, True)


def _open(repo):
    from dulwich.repo import Repo

    return Repo(controldir=repo.common_dir)


def checked_out_branch(repo):
    """The branch checked out in the main checkout (no `refs/heads/`), None when its
    HEAD is detached. A branch with no commit yet is named all the same. Blocks."""
    return blocking.call(_checked_out_branch, repo)


def _checked_out_branch(repo):
    with _open(repo) as repository:
        chain, _sha = repository.refs.follow(b"HEAD")
    if len(chain) > 1 and chain[1].startswith(b"refs/heads/"):
        return os.fsdecode(chain[1][len(b"refs/heads/"):])
    return None


def ref_sha(repo, ref):
    """The commit a ref names, as hex: `ref` is a branch name, a full ref (`refs/...`)
    or `HEAD` (the main checkout's). None when there is no such ref. Blocks."""
    return blocking.call(_ref_sha, repo, full_ref(ref))


def _ref_sha(repo, ref):
    with _open(repo) as repository:
        try:
            sha = repository.refs[ref.encode("utf-8")]
        except KeyError:
            return None
    return sha.decode("ascii") if sha else None


def full_ref(ref):
    """A ref's full name, checked: `HEAD`, `refs/...` as given, or a branch name."""
    if ref == "HEAD":
        return ref
    if isinstance(ref, str) and ref.startswith("refs/") and not ref.startswith("refs/heads/"):
        check_branch_name(ref)      # the same rules; `refs/` keeps it from looking like an option
        return ref
    return branch_ref(ref)


def require_sha(repo, ref):
    """ref_sha, with a missing ref as GitError("not_found")."""
    sha = ref_sha(repo, ref)
    if sha is None:
        raise GitError("not_found", f"no such branch or ref: {ref}")
    return sha


# -- the state of a worktree ------------------------------------------------------------

def uncommitted_changes(worktree, untracked=True, timeout=command.QUICK_S):
    """What `git status` lists in a worktree, as (XY, path) pairs: staged, unstaged and
    (with `untracked`) untracked files; ignored files never. Empty when it is clean."""
    return start_status(worktree, untracked, timeout).changes()


class _Status:
    def __init__(self, pending):
        self.pending = pending

    def changes(self):
        return _parse_status(self.pending.result().stdout)

    def abandon(self):
        self.pending.abandon()


def start_status(worktree, untracked=True, timeout=command.QUICK_S):
    """uncommitted_changes, started: its `changes()` waits for the answer, `abandon()`
    drops it. `--no-optional-locks`: status never takes the index lock, so an agent's
    own git command in that worktree never finds it held by roost. A nested repository
    counts changed when its HEAD moved; its files are not looked into (lockdown.py)."""
    return _Status(command.start(["--no-optional-locks", "status", "--porcelain=v1", "-z", "--ignore-submodules=dirty",
                                  "--untracked-files=" + ("normal" if untracked else "no")],
                                 worktree, timeout=timeout, what="git status"))


def _parse_status(output):
    changes = []
    parts = output.split(b"\0")
    index = 0
    while index < len(parts):
        entry = parts[index]
        index += 1
        if len(entry) < 4:
            continue
        status, path = entry[:2].decode("ascii", "replace"), os.fsdecode(entry[3:])
        if status[0] in "RC":
            index += 1          # a rename's second field is the name it came from
        changes.append((status, path))
    return changes


def is_clean(worktree, untracked=True):
    """No uncommitted changes (and, with `untracked`, no untracked files) in a worktree."""
    return not uncommitted_changes(worktree, untracked)


def describe_changes(changes, most=5):
    """`a.txt, b.txt and 3 more`: changes for a person to read."""
    names = [path for _status, path in changes[:most]]
    more = len(changes) - len(names)
    return ", ".join(names) + (f" and {more} more" if more > 0 else "")


# -- ancestry -----------------------------------------------------------------------------

def is_ancestor(cwd, ancestor_sha, descendant_sha):
    """Whether a commit is reachable from another (both as hex shas)."""
    done = command.run(["merge-base", "--is-ancestor", ancestor_sha, descendant_sha], cwd, check=False,
                       what="git merge-base --is-ancestor")
    if done.returncode in (0, 1):
        return done.returncode == 0
    raise GitError("failed", "git merge-base --is-ancestor failed", done.argv, done.returncode, done.stderr)


def how_related(cwd, base_sha, tip_sha):
    """Where `tip` stands to `base`, in one run of git (`git merge-base`): "contained"
    (base holds tip: nothing to land), "ahead" (tip holds base and more), or "diverged"
    (each has commits the other lacks, or no history in common)."""
    if base_sha == tip_sha:
        return "contained"
    done = command.run(["merge-base", base_sha, tip_sha], cwd, check=False, what="git merge-base")
    if done.returncode not in (0, 1):
        raise GitError("failed", "git merge-base failed", done.argv, done.returncode, done.stderr)
    found = done.text().strip()
    return "contained" if found == tip_sha else "ahead" if found == base_sha else "diverged"


def is_merged(repo, branch, into):
    """Whether `branch`'s tip is reachable from `into` (both branch names or refs)."""
    return is_ancestor(repo.root, require_sha(repo, branch), require_sha(repo, into))


def merged_branches(repo, into, branches):
    """Which of `branches` (names) are merged into `into`, in one run of git: the board
    asks this of every task's branch each time it is listed."""
    return set(merged_tips(repo, into, branches))


def merged_tips(repo, into, branches):
    """{name: its tip} of those of `branches` merged into `into`, in one run of git."""
    refs = [branch_ref(name) for name in branches]
    if not refs:
        return {}
    done = command.run(["for-each-ref", "--format=%(objectname) %(refname)", "--merged=" + require_sha(repo, into),
                        "--", *refs], repo.root, what="git for-each-ref --merged")
    found = dict(reversed(line.split(" ", 1)) for line in done.text().splitlines() if " " in line)
    return {name: found[ref] for name, ref in zip(branches, refs) if ref in found}


def commits_ahead(repo, branch, of):
    """How many commits `branch` has that `of` does not."""
    done = command.run(["rev-list", "--count", require_sha(repo, branch), "^" + require_sha(repo, of)],
                       repo.root, what="git rev-list --count")
    return int(done.text().strip() or 0)


def file_at(repo, ref, path, max_bytes=1 << 20):
    """A file's bytes as committed at `ref` (a branch name or ref; `path` relative to the
    top of the tree), or None when that commit has no such file. The git CLI (`git
    cat-file`): one small read, asked once per action, where dulwich would walk the
    trees in Python on the loop's threadpool for the same 1-2 ms."""
    sha = require_sha(repo, ref)
    if not isinstance(path, str) or not path or path.startswith("/") or "\0" in path or "\n" in path:
        raise GitError("bad_request", f"not a path in a tree: {path!r}")
    done = command.run(["cat-file", "blob", f"{sha}:{path}"], repo.root, check=False, max_output=max_bytes,
                       what="git cat-file blob")
    if done.returncode != 0:
        return None
    return done.stdout
