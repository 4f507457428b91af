"""A jail of its own for each git run that reads or writes a tree's files (issue 26 item 4).

Made with bubblewrap (`bwrap`, from the system's packages; scripts/setup installs it):
the file system read-only but for the run's work tree and its repository's git
directories; the repository's config replaced by its plain copy (repo_config.py),
bound read-only over it; a private `/tmp`, and `/run`, the runtime directory and roost's
home (its sockets, the keeper's, every job's directory) not there at all; no network;
a PID namespace of its own, so nothing it starts can see or signal another process, and
nothing outlives it. Whatever git would still start there could reach no roost socket
and write nothing but what the agent may write already.

Where bubblewrap cannot work (not installed, user namespaces refused), git runs with the
settings alone (lockdown.py, and each driver switched off by name): the log says so once.

The jail costs a few ms a run (bench/git.py); runs that read refs and objects only
(lockdown.touches_content) go without one.
"""

import logging
import os
import threading
from dataclasses import dataclass

from roost.git import checkouts, process

log = logging.getLogger(__name__)

PROBE_S = 10.0
_HIDDEN_ALWAYS = ("/tmp", "/var/tmp", "/run")
_USER_CONFIGS = ("GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM")


@dataclass(frozen=True)
class Frame:
    """What a run may write: its work tree (None for a bare repository), its git dir,
    and the repository's common dir (refs, objects, config)."""

    work_tree: str | None
    git_dir: str
    common_dir: str
    writes: tuple = ()      # more directories the run writes (a worktree it adds or removes)


class Jails:
    """How git runs are jailed here: the places hidden from them, and whether bubblewrap
    works on this machine (asked once, at the first run that needs it)."""

    def __init__(self, hidden=()):
        self.hidden = tuple(hidden)
        self.works = None           # None: not asked yet
        self.why_not = None
        self._asking = threading.Lock()

    def usable(self, env):
        """The path of a bwrap that works here, or None (the reason in `why_not`)."""
        program = process.find_program("bwrap", env)
        if program is None:
            self.why_not = "bubblewrap (bwrap) is not installed"
            return None
        if self.works is None:
            with self._asking:
                if self.works is None:
                    self.works = self._probe(program, env)
        return program if self.works else None

    def _probe(self, program, env):
        ended = process.run(program, ["bwrap", *self._walls(), "--", "true"], env, PROBE_S)
        if ended.returncode == 0:
            return True
        said = ended.stderr.decode("utf-8", "replace").strip()
        self.why_not = f"bubblewrap cannot make a jail here: {said or 'exit %d' % ended.returncode}"
        log.warning("git runs without a jail: %s; it runs nothing a repository configures all the same "
                    "(docs/hardening.md)", self.why_not)
        return False

    def _walls(self):
        # Not --die-with-parent: a git whose daemon was killed runs on to its end, as it
        # would unjailed (a land cut short is judged once its git is done: landing.py).
        walls = ["--ro-bind", "/", "/", "--dev", "/dev", "--unshare-pid", "--proc", "/proc", "--unshare-net",
                 "--unshare-ipc", "--unshare-uts", "--chdir", "/"]
        for place in (*_HIDDEN_ALWAYS, *self.hidden):
            if place and os.path.isdir(place):
                walls += ["--tmpfs", place]
        return walls

    def wrap(self, program, argv, frame, config_copy, env):
        """bwrap's argv running `argv` (git's) in a jail for `frame`."""
        binds = []
        # git itself and the user's own config files where the environment names them,
        # seen even where they lie in a place the jail hides (a temp directory).
        for path in (program, *(env.get(name) for name in _USER_CONFIGS)):
            if path and os.path.isfile(path):
                binds += ["--ro-bind", path, path]
        for place in dict.fromkeys(filter(None, (frame.common_dir, frame.git_dir, frame.work_tree, *frame.writes))):
            binds += ["--bind", place, place]
        config = os.path.join(frame.common_dir, "config")
        if os.path.isfile(config):      # (bound over nothing, bwrap would leave an empty file there)
            binds += ["--ro-bind", config_copy, config]
        return ["bwrap", *self._walls(), *binds, "--", program, *argv[1:]]


def frame_of(cwd):
    """The Frame of a run in `cwd` (a Checkout, or a directory of a repository), or None
    when it is in none."""
    if isinstance(cwd, checkouts.Checkout):
        return Frame(cwd.path, cwd.git_dir, checkouts.common_dir_of(cwd))
    here = os.path.realpath(os.fspath(cwd))
    while True:
        dot_git = os.path.join(here, ".git")
        if os.path.isdir(dot_git):
            return Frame(here, dot_git, _common_dir(dot_git))
        if os.path.isfile(dot_git):
            git_dir = _pointed_at(dot_git, here)
            return Frame(here, git_dir, _common_dir(git_dir)) if git_dir else None
        if all(os.path.exists(os.path.join(here, name)) for name in ("HEAD", "objects", "refs")):
            return Frame(None, here, _common_dir(here))        # a bare repository
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent


def _pointed_at(dot_git, top):
    said = checkouts.read_small(dot_git) or ""
    if not said.startswith("gitdir:"):
        return None
    target = said[len("gitdir:"):].strip()
    return os.path.realpath(os.path.join(top, target))


def _common_dir(git_dir):
    said = (checkouts.read_small(os.path.join(git_dir, "commondir")) or "").strip()
    return os.path.realpath(os.path.join(git_dir, said) if said else git_dir)
