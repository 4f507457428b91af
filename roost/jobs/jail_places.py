"""The places of a job's jail (roost.jobs.jail): what it sees, what it may write, what is
hidden, as bwrap's mounts (roost.unix.bwrap.Mounts), in the order they must apply; the
daemon socket's second name, the one jails reach it by; and what `roost doctor` says of
a profile's files.

A job may write its folder and its job directory, so what it could have put there
counts for nothing: a `.git` that is a link, a `.git` file that names a git directory
that does not name it back, a path reached through a link inside a place it writes.
"""

import glob
import logging
import os
import stat
import sys

from roost import store
from roost.unix import bwrap

log = logging.getLogger(__name__)


def expand(path, home):
    if path.startswith("~"):
        path = (home or os.path.expanduser("~")) + path[1:]
    path = os.path.normpath(path) + ("/" if path.endswith("/") else "")
    if glob.has_magic(path):
        return sorted(glob.glob(path.rstrip("/")))
    return [path]


def paths(items, home):
    for item in items:
        yield from expand(item, home)


def _inside(path, directory):
    return path == directory or path.startswith(directory.rstrip("/") + "/")


def git_places(cwd):
    """(writable, read-only) of the git repository `cwd` is in. A repository the job's
    folder is in is the job's to write, its `.git` whole (`git config` writes there: aider
    sets a missing identity in it). A worktree (a task's) borrows a repository that is
    not its own, the person's checkout that other worktrees share: its own git directory
    (`.git/worktrees/<name>`) and the repository's objects, refs and logs (what a commit
    writes) are writable, the repository's config and hooks read-only.

    The job may write its folder, so what is found there is checked before it counts:
    a `.git` that is a link counts for nothing, and a `.git` file counts only when the
    worktree's git directory it names points back at it (git's own `gitdir` file, which
    the job cannot write unless it already may write that git directory)."""
    directory = os.path.realpath(cwd)
    while True:
        dot_git = os.path.join(directory, ".git")
        if os.path.lexists(dot_git):
            break
        parent = os.path.dirname(directory)
        if parent == directory:
            return [], []
        directory = parent
    if os.path.islink(dot_git):
        return [], []
    git_dir = dot_git
    if os.path.isfile(dot_git):
        git_dir = _worktree_git_dir(dot_git)
        if git_dir is None:
            return [], []
    elif not os.path.isdir(dot_git):
        return [], []
    if git_dir == dot_git:
        return [git_dir], []
    common = os.path.dirname(os.path.dirname(git_dir))
    writable = [git_dir] + [os.path.join(common, name) for name in ("objects", "refs", "logs")]
    return writable, [os.path.join(common, name) for name in ("config", "hooks")]


def _worktree_git_dir(dot_git):
    """The git directory a worktree's `.git` file names, when it is a worktree's of a
    repository (`<repo>/.git/worktrees/<name>`) whose `gitdir` names this file; else None."""
    try:
        with open(dot_git, encoding="utf-8", errors="replace") as handle:
            text = handle.read(4096).strip()
        if not text.startswith("gitdir:"):
            return None
        git_dir = os.path.realpath(os.path.join(os.path.dirname(dot_git), text[len("gitdir:"):].strip()))
        with open(os.path.join(git_dir, "gitdir"), encoding="utf-8", errors="replace") as handle:
            back = handle.read(4096).strip()
    except OSError:
        return None
    if os.path.basename(os.path.dirname(git_dir)) != "worktrees" or not os.path.isabs(back):
        return None
    if os.path.realpath(back) != os.path.realpath(dot_git):
        return None
    return git_dir


def _linked_inside(path, areas):
    """`path` lies in one of `areas` (which a job may write, so it may have put a link
    there) and is reached through a link: a bind of it would follow the job's link."""
    return (os.path.realpath(path) != os.path.abspath(path)
            and any(_inside(path, area) and path != area for area in areas))


def mounts(jail, cwd, job_dir, home, socket_path, keeper_socket, roost_bin, env_home):
    """bwrap's mounts for a job (roost.unix.bwrap.Mounts), in the order they must apply:
    what the user grants, then roost's home and the keeper's directory hidden, then
    what of them the job has, then what it must not see."""
    places = bwrap.Mounts()
    places.tmpfs("/tmp")
    # roost's own files (a checkout or an unpacked copy may be under /tmp).
    for path in sorted({_roost_files(), sys.prefix, os.path.dirname(os.path.realpath(sys.executable))}):
        places.ro_bind(path, must_exist=False)
    hidden = [place for place in dict.fromkeys([home, os.path.dirname(keeper_socket)]) if os.path.isdir(place)]
    for path in paths(jail["read"], env_home):
        places.ro_bind(path.rstrip("/"), must_exist=False)
    git_writable, git_read_only = git_places(cwd)
    writable = []
    for path in paths(jail["write"], env_home):
        if path.endswith("/") and not os.path.exists(path):
            try:
                os.makedirs(path, mode=0o700, exist_ok=True)
            except OSError as error:
                log.info("cannot make %s for a jail: %s", path, error)
        writable.append(path.rstrip("/"))
    writable += git_writable
    writable += [cwd, job_dir]
    writable = [path for path in dict.fromkeys(writable) if path != "/"
                and (path in (cwd, job_dir) or not _linked_inside(path, writable))]
    # Outside the hidden places first; what lies in them after they are hidden.
    in_hidden = [path for path in writable if any(_inside(path, place) for place in hidden)]
    for path in writable:
        if path not in in_hidden:
            places.bind(path, must_exist=path in (cwd, job_dir))
    for place in hidden:
        places.tmpfs(place)
    for path in in_hidden:
        places.bind(path, must_exist=path in (cwd, job_dir))
    if roost_bin:
        places.ro_bind(roost_bin, must_exist=False)
    _reach_socket(places, socket_path, hidden)
    for path in git_read_only:
        places.ro_bind(path, must_exist=False)
    for path in paths(jail["hide"], env_home):
        places.hide(path.rstrip("/"))
    for place in hidden:
        places.remount_ro(place)     # what is left of them: empty, and stays so
    return places


SOCKET_LINKS = ".jail"


def socket_link(socket_path):
    """Where the daemon's socket has a second name (a hard link), in a directory of its
    own that a jail binds: a jail that bound the socket itself would keep the socket of
    the daemon it started under, dead once a new daemon serves."""
    return os.path.join(os.path.dirname(socket_path), SOCKET_LINKS, os.path.basename(socket_path))


def link_socket(socket_path):
    """Give the daemon's new socket its jails' name (replacing a previous daemon's)."""
    link = socket_link(socket_path)
    os.makedirs(os.path.dirname(link), mode=0o700, exist_ok=True)
    try:
        os.unlink(link)
    except FileNotFoundError:
        pass
    os.link(socket_path, link)


def _reach_socket(places, socket_path, hidden):
    link = socket_link(socket_path)
    directory = os.path.dirname(socket_path)
    if os.path.exists(link) and directory in hidden:
        places.ro_bind(os.path.dirname(link))
        places.symlink(os.path.join(SOCKET_LINKS, os.path.basename(socket_path)),
                       os.path.join(os.path.realpath(directory), os.path.basename(socket_path)))
    else:
        places.ro_bind(socket_path, must_exist=False)


def move_into(moves, home):
    """Move each file of `moves` ({file: folder}, a profile's `sandbox.moveInto`) into
    its folder, which the jail writes, and leave a link to it in its place: a program
    that saves a file by a temporary file beside it and a rename (Claude Code's
    ~/.claude.json) can then save it from a jail, through the link, and every other
    program still finds it where it was. Once: a link there already is left alone, and
    so is a file the folder already holds of that name. A file that is not there gets
    the link alone (the program makes the file through it)."""
    for item, into in moves.items():
        path = expand(item, home)[0].rstrip("/")
        folder = expand(into, home)[0].rstrip("/")
        if os.path.islink(path) or (os.path.lexists(path) and not os.path.isfile(path)):
            continue
        target = os.path.join(folder, os.path.basename(path))
        try:
            os.makedirs(folder, mode=0o700, exist_ok=True)
            if os.path.lexists(path):
                if os.path.lexists(target):
                    log.warning("%s is not moved into %s: %s is there already", path, folder, target)
                    continue
                with open(path, "rb") as handle:
                    data = handle.read()
                # The folder is the jail's to write: the atomic writer follows no link planted there.
                store.write_bytes(target, data, mode=stat.S_IMODE(os.stat(path).st_mode))
            link = path + ".roost-link"
            if os.path.lexists(link):
                os.unlink(link)
            os.symlink(os.path.relpath(target, os.path.dirname(path)), link)
            os.rename(link, path)        # the file's name now leads to its new place, at once
            log.warning("moved %s into %s and left a link in its place, so a jail may save it", path, folder)
        except OSError as error:
            log.warning("cannot move %s into %s for a jail: %s", path, folder, error)


def file_notes(profile, home):
    """What `roost doctor` says of a profile's `sandbox.write` files: a file (not a link)
    in a folder the jail does not write cannot be replaced there (an agent that saves it
    by a temporary file beside it and a rename, as Claude Code saves ~/.claude.json,
    loses its changes in a jail). Moved into a folder the jail writes, with a link left
    in its place, it is written through the link."""
    sandbox = profile.get("sandbox") if isinstance(profile, dict) else None
    items = sandbox.get("write") if isinstance(sandbox, dict) else None
    if not isinstance(items, list):
        return []
    moved = sandbox.get("moveInto") if isinstance(sandbox.get("moveInto"), dict) else {}
    folders = [item for item in items if isinstance(item, str) and item.endswith("/")]
    notes = []
    for item in items:
        if not isinstance(item, str) or item.endswith("/") or glob.has_magic(item) or item in moved:
            continue
        path = expand(item, home)[0]
        if os.path.islink(path) or not os.path.isfile(path):
            continue
        name = os.path.basename(path)
        into = folders[0].rstrip("/") if folders else "~/A-FOLDER-IT-WRITES"
        notes.append(f"{item} is a file in a folder its jail does not write: an agent that saves it by a file "
                     f"beside it and a rename loses what it changes there in a jail; to keep it, move it into a "
                     f"folder the jail writes and leave a link: mv {item} {into}/{name.lstrip('.')} && "
                     f"ln -s {os.path.relpath(os.path.join(expand(into, home)[0], name.lstrip('.')), os.path.dirname(path))} {item}")
    return notes


def _roost_files():
    from roost.bundle import files
    return files.bundle_dir()
