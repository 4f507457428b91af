"""What a job's jail lets it see and write (issue 26; the manual: docs/security.md).

Every job runs in a jail of its own (roost.unix.bwrap) wherever bubblewrap works, but the
person's own shell (`--as-me`), a launch with `sandbox: false` (`roost run --no-sandbox`),
and what roost.json turns off (`"sandbox": false` at its top, or in a profile).

In a jail the file system is read-only, `/tmp` is its own, and roost's home is hidden;
the jail may write:
- its working directory (a task's worktree), and the git directories git writes for it
  there (a worktree's own, the repository's objects, refs and logs), never a
  repository's config or hooks;
- its own job directory (`ROOST_JOB_DIR`), inside the hidden home;
- `sandbox.write` of its profile (the built-in profiles name their agent's state and
  cache directories) and of roost.json's top (for every job).
`sandbox.read` binds paths read-only (a program installed under /tmp), `sandbox.hide`
hides paths (`~/.ssh` by default), `sandbox.network: "off"` gives it no
network. It reaches the daemon's socket and roost's own `roost` (first on its PATH), not
the keeper's socket nor any other job's directory. It gets a range of ports of its own
(`sandbox.ports`: `{"first": 41000, "each": 20}`, the first in `PORT`, the range in
`ROOST_PORTS`) and `TMPDIR` in its private /tmp.

A path in `write`, `read` or `hide` is absolute or starts with `~` (the job's HOME); it
may hold a glob (`~/.aider*`). One of `write` that ends with `/` is made (a directory,
0700) when it is missing; any other that is missing is left out.
"""

import glob
import logging
import os
import shutil
import sys

from roost.errors import bad_request
from roost.jobs import profiles
from roost.unix import bwrap

log = logging.getLogger(__name__)

DEFAULT_HIDE = ("~/.ssh",)
DEFAULT_PORTS = {"first": 41000, "each": 20}
_MAX_PORT = 65535
_LISTS = ("write", "read", "hide")


class Availability:
    """Whether jails can be made here: tried once, when first asked (a jail costs a few
    ms to try; a daemon that starts no job never tries)."""

    def __init__(self, probe=bwrap.probe):
        self._probe = probe
        self._result = None

    def get(self):
        """(works, why not, version, programs)."""
        if self._result is None:
            programs = bwrap.find_programs(os.defpath + os.pathsep + os.environ.get("PATH", ""))
            works, why, version = self._probe(programs)
            self._result = (works, why, version, programs)
            if works:
                log.info("jobs run jailed (%s)", version or "bwrap")
            else:
                log.warning("jobs run without a jail: %s", why)
        return self._result


def _profile(config, launch):
    name = launch.get("profile")
    if not name:
        return {}
    try:
        return profiles.find(config, name)
    except Exception:       # a profile since removed from roost.json: roost.json's top still counts
        return {}


def decide(config, launch, availability):
    """(jailed, why not): whether a start of this launch runs in a jail."""
    if launch.get("person"):
        return False, "the person's own shell (--as-me) is never jailed"
    if launch.get("sandbox") is False:
        return False, "started with --no-sandbox (sandbox: false)"
    if config.get("sandbox") is False:
        return False, "roost.json says \"sandbox\": false"
    if _profile(config, launch).get("sandbox") is False:
        return False, f"its profile {launch.get('profile')} says \"sandbox\": false"
    works, why, _, _ = availability.get()
    if not works:
        return False, why
    return True, None


def settings(config, launch):
    """The jail's settings for a launch: roost.json's top `sandbox` and its profile's,
    lists joined, the profile's network and ports before the top's."""
    found = {"write": [], "read": [], "hide": list(DEFAULT_HIDE), "network": "on", "ports": dict(DEFAULT_PORTS)}
    profile = _profile(config, launch)
    for what, given in (("roost.json's sandbox", config.get("sandbox")),
                        (f"agentProfiles.{launch.get('profile')}.sandbox", profile.get("sandbox"))):
        if given is None or given is True:
            continue
        if not isinstance(given, dict):
            raise bad_request(f"{what} must be false or an object (write, read, hide, network, ports)")
        for key in _LISTS:
            value = given.get(key)
            if value is None:
                continue
            if not isinstance(value, list) or not all(isinstance(item, str) and item for item in value):
                raise bad_request(f"{what}.{key} must be a list of paths")
            for item in value:
                if not (item.startswith("/") or item.startswith("~")):
                    raise bad_request(f"{what}.{key}: {item!r} is neither absolute nor under ~")
            found[key] += value
        network = given.get("network")
        if network is not None:
            if network not in ("on", "off"):
                raise bad_request(f"{what}.network must be \"on\" or \"off\"")
            found["network"] = network
        ports = given.get("ports")
        if ports is not None:
            found["ports"] = _check_ports(ports, f"{what}.ports")
    return found


def _check_ports(ports, what):
    if not isinstance(ports, dict) or not all(isinstance(ports.get(key), int) and not isinstance(ports.get(key), bool)
                                              for key in ("first", "each")):
        raise bad_request(f"{what} must be {{\"first\": port, \"each\": count}}")
    if not 1024 <= ports["first"] <= _MAX_PORT or not 1 <= ports["each"] <= _MAX_PORT - ports["first"] + 1:
        raise bad_request(f"{what}: first must be 1024-65535 and each at least 1, within 65535")
    return {"first": ports["first"], "each": ports["each"]}


def port_range(ports, taken):
    """[first, last] of the first range of `ports` no live job holds (`taken`: their
    first ports); None when every range is held."""
    first, each = ports["first"], ports["each"]
    start = first
    while start + each - 1 <= _MAX_PORT:
        if start not in taken:
            return [start, start + each - 1]
        start += each
    return None


def _expand(path, home):
    if path.startswith("~"):
        path = (home or os.path.expanduser("~")) + path[1:]
    path = os.path.normpath(path) + ("/" if path.endswith("/") else "")
    if glob.has_magic(path):
        return sorted(glob.glob(path.rstrip("/")))
    return [path]


def _paths(items, home):
    for item in items:
        yield from _expand(item, home)


def _inside(path, directory):
    return path == directory or path.startswith(directory.rstrip("/") + "/")


def git_places(cwd):
    """(writable, read-only) of the git repository `cwd` is in: its git directory (a
    worktree's own under .git/worktrees/) writable, and a worktree's repository's
    objects, refs and logs; its config and hooks read-only.

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
    writable, read_only = [git_dir], []
    common = git_dir
    if git_dir != dot_git:
        common = os.path.dirname(os.path.dirname(git_dir))
        writable += [os.path.join(common, name) for name in ("objects", "refs", "logs")]
    for place in {git_dir, common}:
        read_only += [os.path.join(place, name) for name in ("config", "hooks", "config.worktree")]
    return writable, read_only


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
    for path in _paths(jail["read"], env_home):
        places.ro_bind(path.rstrip("/"), must_exist=False)
    git_writable, git_read_only = git_places(cwd)
    writable = []
    for path in _paths(jail["write"], env_home):
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
    for path in _paths(jail["hide"], env_home):
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
    folders = [item for item in items if isinstance(item, str) and item.endswith("/")]
    notes = []
    for item in items:
        if not isinstance(item, str) or item.endswith("/") or glob.has_magic(item):
            continue
        path = _expand(item, home)[0]
        if os.path.islink(path) or not os.path.isfile(path):
            continue
        name = os.path.basename(path)
        into = folders[0].rstrip("/") if folders else "~/A-FOLDER-IT-WRITES"
        notes.append(f"{item} is a file in a folder its jail does not write: an agent that saves it by a file "
                     f"beside it and a rename loses what it changes there in a jail; to keep it, move it into a "
                     f"folder the jail writes and leave a link: mv {item} {into}/{name.lstrip('.')} && "
                     f"ln -s {os.path.relpath(os.path.join(_expand(into, home)[0], name.lstrip('.')), os.path.dirname(path))} {item}")
    return notes


def find_program(name, env, cwd):
    """`name` as the keeper would run it (execvp's search in the job's PATH), or None."""
    if "/" in name:
        return name if os.access(os.path.join(cwd, name), os.X_OK) else None
    return shutil.which(name, path=env.get("PATH", os.defpath))


def exec_problem(path):
    """Why the kernel would refuse to run `path`, said before a jail runs it (in a jail
    the refusal would come from inside, after the job was made): a file that starts
    neither with `#!` nor with an ELF header. None when it looks runnable."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(7)
    except OSError as error:
        return error.strerror
    if head.startswith(b"#!"):
        return None
    # ELF: the magic, a class (32/64 bits), a byte order and version 1.
    if len(head) == 7 and head[:4] == b"\x7fELF" and head[4] in (1, 2) and head[5] in (1, 2) and head[6] == 1:
        return None
    return "Exec format error"


def read_only_note(text):
    """What a job's end says when its output's tail shows a write its jail refused."""
    tail = "\n".join(text.splitlines()[-40:])
    if "Read-only file system" not in tail:
        return None
    return ("its output ends with \"Read-only file system\": its jail lets it write only its folder, its "
            "job directory, its /tmp and what sandbox.write names in roost.json (docs/security.md)")


def _roost_files():
    from roost.bundle import files
    return files.bundle_dir()
