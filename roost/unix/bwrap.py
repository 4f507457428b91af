"""bubblewrap (`bwrap`), the jail every job runs in (issue 26, docs/security.md): its
argv built in one place, and whether it works on this machine.

A jailed program is started as

    sh -c 'trap "" INT QUIT TSTP TERM; "$@"; exit' roost-jail \\
        bwrap --unshare-user --unshare-pid --unshare-ipc [--unshare-net] --cap-drop ALL \\
              --die-with-parent MOUNTS --chdir CWD -- \\
        env --default-signal=INT,QUIT,TSTP,TERM -- PROGRAM ARGS...

Why each part:
- No `--new-session`: the pty stays the program's controlling terminal (Ctrl-C, a
  shell's job control); TIOCSTI then reaches only its own pty.
- Ctrl-C and a stop's SIGTERM go to the whole process group, bwrap's two processes
  included: they ignore those signals (the shell sets that, exec passes it on) so only
  the program acts on them, and `env --default-signal` gives the program its defaults
  back. bwrap leaves when the program ends, with its status.
- `--die-with-parent`: bwrap's pid 1 in the jail dies with bwrap, and every process of
  the jail with it: nothing a job leaves behind outlives its first process. The shell
  stays between the keeper and bwrap so that a keeper that dies does not take its jobs
  along (they run on, as unjailed ones do).
- `--cap-drop ALL`: run as root, bwrap would keep the capabilities in the jail's user
  namespace, enough to unmount what hides roost's home.
- bwrap reports a program killed by signal n as exit status 128 + n (as a shell does):
  `exit_fields` reads it back.
- Run as root, the program is `nobody` (65534) in its user namespace, still root's uid
  outside (what it writes is root's): the kernel lets no process without CAP_SETFCAP
  map a namespace's root into a user namespace of its own, so an agent that sandboxes
  its own tools with one (Codex runs bwrap) could not as uid 0. Any other user is itself.

Standard library only.
"""

import os
import shutil
import signal
import subprocess

PROGRAM = "bwrap"
# What bwrap and its shell ignore, and the program gets back at their default.
HELD_SIGNALS = ("INT", "QUIT", "TSTP", "TERM")
_SHELL_SCRIPT = f'trap "" {" ".join(HELD_SIGNALS)}; "$@"; exit'
SHELL_NAME = "roost-jail"       # $0 of the shell: what `ps` shows for a jail's outer process
PROBE_TIMEOUT_S = 10.0
NOBODY = 65534


class Mounts:
    """bwrap's file-system options, applied in the order they are added: a later mount
    covers an earlier one at the same place or above it. Each place is mounted where
    its links lead (bwrap cannot mount onto a link); a link to it, seen through the
    read-only `/`, leads there in the jail too."""

    def __init__(self):
        self.options = []

    def ro_bind(self, path, must_exist=True):
        path = os.path.realpath(path)
        self.options += ["--ro-bind" if must_exist else "--ro-bind-try", path, path]

    def bind(self, path, must_exist=True):
        path = os.path.realpath(path)
        self.options += ["--bind" if must_exist else "--bind-try", path, path]

    def tmpfs(self, path):
        self.options += ["--tmpfs", os.path.realpath(path)]

    def symlink(self, target, path):
        self.options += ["--symlink", target, path]

    def remount_ro(self, path):
        """The mount at `path` (a tmpfs of the jail's) read-only; mounts under it keep theirs."""
        self.options += ["--remount-ro", os.path.realpath(path)]

    def hide(self, path):
        """An empty directory over a directory, an empty file over anything else; nothing
        when there is nothing there."""
        path = os.path.realpath(path)
        if os.path.isdir(path):
            self.options += ["--tmpfs", path, "--remount-ro", path]
        elif os.path.lexists(path):
            self.options += ["--ro-bind", "/dev/null", path]


def jail_argv(programs, mounts, cwd, argv, network=True):
    """The argv that runs `argv` in a jail (module docstring); `programs`: the absolute
    paths of sh, bwrap and env (`find_programs`)."""
    shell, bwrap, env = programs
    options = ["--unshare-user", "--unshare-pid", "--unshare-ipc", "--cap-drop", "ALL", "--die-with-parent"]
    if os.getuid() == 0:
        options += ["--uid", str(NOBODY), "--gid", str(NOBODY)]
    if not network:
        options.append("--unshare-net")
    options += ["--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev"]
    options += mounts.options
    options += ["--chdir", cwd]
    return ([shell, "-c", _SHELL_SCRIPT, SHELL_NAME, bwrap] + options +
            ["--", env, "--default-signal=" + ",".join(HELD_SIGNALS), "--"] + list(argv))


def is_jail(pid):
    """Whether `pid` is a jail's outer shell (`jail_argv`): a run a daemon spawned but did
    not live to record."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            argv = handle.read(4096).split(b"\0")
    except OSError:
        return False
    return len(argv) > 4 and argv[1] == b"-c" and argv[3] == SHELL_NAME.encode()


def program_pid(pid):
    """The pid (in this PID namespace) of the program a jail runs, from its outer shell's
    `pid`: shell -> bwrap -> bwrap's pid 1 in the jail -> the program, pid 2 there. `pid`
    itself when it is no jail's; None while the program is not there (starting, gone)."""
    if not is_jail(pid):
        return pid
    for level in range(3):
        children = _children(pid)
        if level < 2:
            if len(children) != 1:
                return None
            pid = children[0]
            continue
        for child in children:
            if _namespace_pid(child) == 2:
                return child
    return None


def _children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as handle:
            return [int(child) for child in handle.read().split()]
    except OSError:
        return []


def _namespace_pid(pid):
    """`pid`'s number in its own (innermost) PID namespace."""
    try:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                if line.startswith("NSpid:"):
                    return int(line.split()[-1])
    except (OSError, ValueError):
        pass
    return None


def find_programs(path=None):
    """(sh, bwrap, env) as absolute paths, or None when one is missing."""
    found = tuple(shutil.which(name, path=path) for name in ("sh", PROGRAM, "env"))
    return found if all(found) else None


def probe(programs=None):
    """(works, why not, version): whether a jail can be made here, trying one."""
    programs = programs or find_programs(os.defpath + os.pathsep + os.environ.get("PATH", ""))
    if programs is None:
        return False, "bubblewrap (bwrap) is not installed (Debian, Ubuntu: apt-get install bubblewrap)", None
    try:
        version = subprocess.run([programs[1], "--version"], capture_output=True, text=True,
                                 timeout=PROBE_TIMEOUT_S).stdout.strip() or None
        tried = subprocess.run(jail_argv(programs, Mounts(), "/", ["true"]), capture_output=True, text=True,
                               stdin=subprocess.DEVNULL, timeout=PROBE_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as error:
        return False, f"bwrap could not be run: {error}", None
    if tried.returncode != 0:
        said = " ".join((tried.stderr or tried.stdout).split())[:300] or f"exit status {tried.returncode}"
        hint = ""
        if "namespace" in said.lower() or "permission" in said.lower():
            hint = (" (user namespaces refused: see sysctl kernel.unprivileged_userns_clone, "
                    "kernel.apparmor_restrict_unprivileged_userns, user.max_user_namespaces)")
        return False, f"bwrap cannot make a jail here: {said}{hint}", version
    return True, None, version


def exit_fields(fields):
    """A jailed run's exit as the keeper recorded it (bwrap's status: 128 + n for a
    program killed by signal n) read back as the program's own: {status, code, signal}.
    An exit status above 128 that a program chose itself reads as a signal too, as in
    a shell."""
    code = fields.get("code")
    if fields.get("signal") or not isinstance(code, int) or not 128 < code < 128 + signal.NSIG:
        return fields
    try:
        signal.Signals(code - 128)
    except ValueError:
        return fields
    return dict(fields, code=None, signal=code - 128)
