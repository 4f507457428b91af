"""Git for the task board (M47, M54-M60): the safe, tested operations a task's branch,
worktree and merge are made of. The board decides what to do; this package does it, and
refuses whatever would lose work.

    from roost import git
    repo = git.repository_of("/some/dir/in/a/checkout")          # None outside a repository
    base = git.checked_out_branch(repo)                           # "main"
    branch = git.task_branch(repo, 7, "Fix the $(touch x) bug")   # "roost/t7-fix-the-touch-x-bug"
    tree = git.add_worktree(repo, "/home/u/.local/state/roost/worktrees/r1/t7", branch, base)
    git.commit_all(tree.path, "Fix the bug")
    result = git.sync_with_base(repo, tree.path, base)            # merged / up_to_date / conflict / refused
    landed = git.land(repo, branch, base, mode="ff")              # or "no-ff"
    git.remove_worktree(repo, tree.path, base=base)               # refused while work would be lost

The API, module by module (every name below is also importable from `roost.git`):

- `repository`: `Repository(root, common_dir, bare)`; `repository_of(dir)` (a linked
  worktree counts as its repository); `checked_out_branch(repo)`, the main checkout's;
  `ref_sha(repo, ref)` (None when missing), `require_sha`; `file_at(repo, ref, path)`,
  a committed file's bytes; `uncommitted_changes(worktree, untracked=True)` as (XY,
  path) pairs, `start_status` (the same, started: it runs while the caller goes on),
  and `is_clean(worktree)`; `is_merged(repo, branch, into)`, `merged_branches(repo,
  into, branches)` (one run for the whole board) and `merged_tips` (the same, with each
  branch's tip), `commits_ahead(repo, branch, of)`.
- `names`: `slug(title)`; `check_branch_name(name)` (git's rules); `task_branch(repo,
  id, title)`, a free `roost/t<id>-<slug>` that `git check-ref-format --branch` accepts.
- `worktrees`: `Worktree(path, branch, head, main, bare, locked, prunable)`;
  `add_worktree(repo, path, branch, base=None)` (a new branch from base, or an existing
  branch); `remove_worktree(repo, path, base=None, force=False)` (refused when dirty or,
  with base, unmerged); `list_worktrees(repo)`, `find_worktree`; `checked_out_at(repo,
  branch)`; `prune_worktrees(repo, dry=False)`; `delete_branch(repo, branch, base=None,
  force=False)`; `wait_until_idle(repo, timeout)`, until no git holds an index lock there.
- `checkouts`: `Checkout(path, git_dir, main)`; `checkout_of(repo, path)`, a worktree
  with its git dir from the repository's record (never its own `.git` file), refused
  (`tampered`) once that file points elsewhere. Every function below that works in a
  linked worktree takes its Checkout; a bare path of one is refused.
- `changes`: `commit_all(worktree, message)` (the new sha, None when nothing to commit);
  `sync_with_base(repo, worktree, base)` -> `SyncResult(outcome, head, base, conflicts,
  detail)`; `abort_sync(worktree)`; `diff(repo, base, branch)` -> `Diff(text, truncated,
  base, tip)`; `changed_files(repo, base, branch)` -> `[ChangedFile(status, path,
  old_path)]`; `worktree_head(worktree)`.
- `overlap` (the overlap radar's, imported as `roost.git.overlap`): `touched_files(repo,
  place, base, branch)` -> `Touched(tip, files)`, committed since base and not;
  `predict_merge(repo, one, other)` -> `Prediction(conflicts, note)` by `git merge-tree
  --write-tree` (conflicts None, with a note, on a git older than 2.38); `git_version`.
- `landing`: `land(repo, branch, base, mode="ff"|"no-ff")` -> `LandResult(outcome, mode,
  old, new, checkout, repaired)`, under the repository's lock; `recover_land(repo)`.
- `remote`: `push_branch(repo, branch, remote=None)` (the remote: `origin`, or the
  only one); `open_pull_request(cwd, base, branch, title, body)`, GitHub's `gh pr
  create`, whose answer is the request's address.
- `errors`: `GitError(reason, text)`, the one exception: a RoostError whose code fits its
  `reason` (`dirty`, `unmerged`, `not_synced`, `conflict`, `no_identity`, `busy`, ...),
  with git's stderr in its text.

Branches and bases are branch names (`main`, `roost/t7-x`; `refs/heads/...` is taken
too), checked against git's rules before any use; paths are absolute or made so.

Blocking: the functions that read with dulwich (`repository_of`, `checked_out_branch`,
`ref_sha`, `task_branch`'s lookup, `worktree_head`, and through them most others) run
through roost's one seam, `roost.blocking.call`; once the daemon turned its threadpool
on they run there. Everything else runs git, which under
the daemon's patching is a cooperative subprocess. `git.use_umask(mask)` gives git the
user's umask (the daemon's own is 077). Which operation uses dulwich and which the git
CLI, and the figures behind each choice, are in each module's docstring.

Every git run: an argv list, `--` before paths, the user's environment with no prompt
possible (command.py), a bounded timeout, a session of its own, and nothing run that a
repository's config, attributes or nested repositories name (lockdown.py): a run that
reads or writes a tree's files runs in a jail (jail.py) with the repository's plain
config (repo_config.py). `git.use_jails(hidden, private_dir)` tells it what to hide.
"""

from roost.git.changes import (ChangedFile, Diff, SyncResult, abort_sync, changed_files, commit_all, diff,
                               sync_with_base, worktree_head)
from roost.git.checkouts import Checkout, checkout_of
from roost.git.command import use_jails, use_umask
from roost.git.errors import GitError
from roost.git.landing import LandResult, land, recover_land
from roost.git.names import check_branch_name, slug, task_branch
from roost.git.remote import open_pull_request, push_branch
from roost.git.repository import (Repository, checked_out_branch, commits_ahead, file_at, is_clean, is_merged,
                                  merged_branches, merged_tips, ref_sha, repository_of, require_sha, start_status,
                                  uncommitted_changes)
from roost.git.worktrees import (Worktree, add_worktree, checked_out_at, delete_branch, find_worktree,
                                 list_worktrees, prune_worktrees, remove_worktree, wait_until_idle)

__all__ = [
    "ChangedFile", "Checkout", "Diff", "GitError", "LandResult", "Repository", "SyncResult", "Worktree",
    "abort_sync", "add_worktree", "changed_files", "check_branch_name", "checkout_of", "checked_out_at",
    "checked_out_branch", "commit_all", "commits_ahead", "delete_branch", "diff", "file_at", "find_worktree",
    "is_clean", "is_merged", "land", "list_worktrees", "merged_branches", "merged_tips", "open_pull_request",
    "prune_worktrees", "push_branch", "recover_land", "ref_sha", "remove_worktree", "repository_of",
    "require_sha", "slug", "start_status", "sync_with_base", "task_branch", "uncommitted_changes",
    "use_jails", "use_umask", "wait_until_idle",
    "worktree_head",
]
