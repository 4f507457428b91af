"""Where roost puts a task's worktree (M65): a directory of its own in its home,
`$ROOST_HOME/worktrees/<repository key>/t<id>`, never beside the user's checkout, so
everything roost made is in one place that cleanup can go through and that nothing else
writes to. The key is the repository's directory name (for a person reading `git worktree
list`) and a hash of its path (two checkouts named alike stay apart)."""

import hashlib
import os
import re

from roost import store

DIRECTORY = "worktrees"


def worktrees_dir(home):
    return os.path.join(os.path.realpath(home), DIRECTORY)


def repository_key(root):
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", os.path.basename(root.rstrip("/")))[:40].strip("-.") or "repo"
    return f"{name}-{hashlib.sha256(os.fsencode(root)).hexdigest()[:10]}"


def new_worktree_path(home, root, task_id):
    """A path for task `task_id`'s worktree that nothing occupies (`t7`, else `t7-2`, ...);
    its parent directories are made, private to the user."""
    parent = os.path.join(worktrees_dir(home), repository_key(root))
    store.make_private_dir(worktrees_dir(home))
    store.make_private_dir(parent)
    for number in range(1, 100):
        path = os.path.join(parent, f"t{task_id}" if number == 1 else f"t{task_id}-{number}")
        if not os.path.lexists(path):
            return path
    raise RuntimeError(f"no free worktree path for task #{task_id} under {parent}")


def is_ours(home, path):
    """Whether `path` lies under roost's worktrees directory (the only place it ever
    removes a worktree's files from by itself)."""
    top = worktrees_dir(home) + os.sep
    return bool(path) and os.path.realpath(path).startswith(top)


def inside(path, directory):
    """Whether `path` is `directory` or lies under it (both resolved)."""
    path, directory = os.path.realpath(path), os.path.realpath(directory)
    return path == directory or path.startswith(directory.rstrip(os.sep) + os.sep)


def known_directories(home):
    """Every worktree directory under roost's own: (repository key, path)."""
    top = worktrees_dir(home)
    try:
        keys = sorted(os.listdir(top))
    except FileNotFoundError:
        return []
    found = []
    for key in keys:
        try:
            names = sorted(os.listdir(os.path.join(top, key)))
        except (NotADirectoryError, FileNotFoundError):
            continue
        found += [(key, os.path.join(top, key, name)) for name in names]
    return found
