"""Running the git program: the one place roost.git starts a process.

Every run is an argv list (never a shell string), with the user's environment
(`user_environ()`: not the frozen bundle's) minus the variables that point git at
another repository, and with every prompt turned off, so nothing ever waits on a
terminal: no askpass or terminal prompt, `true` as the editor, `cat` as the pager, stdin
from /dev/null, and a session of its own (no controlling terminal to open; a timeout
kills the whole group, hooks included). Each run has a bounded timeout.

A task's worktree is named by its Checkout (checkouts.py), never by its path alone: the
run names `--git-dir` and `--work-tree` from the repository's record, so the worktree's
own `.git` file is never followed. A worktree named by a bare path is refused rather
than trusted.

Every run takes no orders from the config and attributes an agent may have written
(issue 26 item 4): lockdown.py's settings (no hook, fsmonitor, signing, transport,
submodule recursion, ...), given as `-c` so they win over every config file and reach
the git runs git starts itself; and a run that reads or writes a tree's files runs in a
jail (jail.py) with the repository's config replaced by its plain copy (repo_config.py),
so no filter, merge or diff driver it names can run. Without a jail, each driver the
repository's config names is switched off by name instead.

Under the daemon's gevent patching a git run waits cooperatively (process.py): it never
holds the event loop, however long it takes.
"""

import os

from roost.bundle.userenv import user_environ
from roost.git import checkouts, jail, lockdown, process, repo_config
from roost.git.errors import GitError

QUICK_S = 30.0      # queries: rev-parse, status, list, diff
WORK_S = 600.0      # what writes a tree or runs hooks: checkout, merge, commit

# `git rev-parse --local-env-vars` and kin: a daemon started from inside a git hook (or a
# shell that set GIT_DIR) would otherwise act on that repository, not the one named.
_LOCATION_VARIABLES = (
    "GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_NAMESPACE", "GIT_PREFIX", "GIT_IMPLICIT_WORK_TREE",
    "GIT_SHALLOW_FILE", "GIT_GRAFT_FILE", "GIT_INTERNAL_SUPER_PREFIX", "GIT_QUARANTINE_PATH",
    "GIT_LITERAL_PATHSPECS", "GIT_GLOB_PATHSPECS", "GIT_NOGLOB_PATHSPECS", "GIT_ICASE_PATHSPECS",
)

# Nothing may ask: a credential prompt, an editor for a merge message, a pager.
_NO_PROMPTS = {
    "GIT_TERMINAL_PROMPT": "0",
    "GCM_INTERACTIVE": "never",
    "GIT_EDITOR": "true",
    "GIT_SEQUENCE_EDITOR": "true",
    "GIT_MERGE_AUTOEDIT": "no",
    "GIT_PAGER": "cat",
    "PAGER": "cat",
}

_umask = None       # the user's umask, for what git creates (the daemon's own is 077)
_jails = jail.Jails()
_copies = None      # repo_config.Copies, made on first use unless use_jails named a place


def use_umask(mask):
    """Give every git run the user's umask (the daemon runs under 077, which would make
    every file of a worktree private to the user)."""
    global _umask
    _umask = mask


def use_jails(hidden, private_dir):
    """The daemon's: hide `hidden` (roost's home, its socket's directory) from every
    jailed run, and keep the repositories' plain configs in `private_dir`."""
    global _jails, _copies
    _jails = jail.Jails(hidden)
    _copies = repo_config.Copies(private_dir)


def _config_copies():
    global _copies
    if _copies is None:
        import tempfile

        _copies = repo_config.Copies(tempfile.mkdtemp(prefix="roost-git-"))
    return _copies


def git_environ(extra=None, remote=False):
    """The environment of a git run: the user's, repository pointers dropped, prompts off,
    and lockdown's settings (`remote`: a run that reaches a remote, `git push`)."""
    env = user_environ()
    for name in _LOCATION_VARIABLES:
        env.pop(name, None)
    env.update(_NO_PROMPTS)
    lockdown.environ(env, remote)
    if extra:
        env.update(extra)
    return env


class Completed:
    """A finished git run: `stdout` as bytes (paths may be any bytes), `stderr` as text."""

    def __init__(self, argv, returncode, stdout, stderr, truncated=False):
        self.argv = argv
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr
        self.truncated = truncated

    @property
    def ok(self):
        return self.returncode == 0

    def text(self):
        return self.stdout.decode("utf-8", "replace")

    def lines(self):
        """NUL-separated output (`-z`) as str, the way os.fsdecode round-trips any path."""
        return [os.fsdecode(part) for part in self.stdout.split(b"\0") if part]


def run(args, cwd, timeout=QUICK_S, input=None, check=True, what=None, env=None, max_output=None, writes=(),
        remote=False):
    """Run `git <args>` in `cwd` (as `git -C cwd`: process.py says why no chdir). A
    nonzero exit raises GitError("failed") unless `check` is false; a run past `timeout`
    is killed (its whole group) and raises GitError("timeout"). `input` (bytes) goes to
    its stdin. With `max_output`, at most that many bytes of stdout are kept, the run is
    stopped there and `truncated` is set. `writes`: directories besides the repository
    and its work tree that the run writes (a worktree git adds or removes). `remote`:
    the run reaches a remote (`git push`), with the user's transports and credentials."""
    return start(args, cwd, timeout, input, check, what, env, max_output, writes, remote).result()


class Pending:
    """A git run started and not yet waited for: `result()` is what `run` returns,
    `abandon()` kills it (a caller that no longer needs its answer)."""

    def __init__(self, running, argv, label, timeout, check, max_output):
        self.running, self.argv, self.label = running, argv, label
        self.timeout, self.check, self.max_output = timeout, check, max_output

    def result(self):
        ended = self.running.finish()
        if ended.timed_out:
            raise GitError("timeout", f"{self.label}: no answer after {self.timeout:g} s (killed)", self.argv)
        returncode = 0 if ended.truncated else ended.returncode
        done = Completed(self.argv, returncode, ended.stdout[:self.max_output] if ended.truncated else ended.stdout,
                         ended.stderr.decode("utf-8", "replace"), ended.truncated)
        if self.check and done.returncode != 0:
            raise GitError("failed", f"{self.label} failed (exit {done.returncode})", self.argv, done.returncode,
                           done.stderr)
        return done

    def abandon(self):
        self.running.abandon()


def start(args, cwd, timeout=QUICK_S, input=None, check=True, what=None, env=None, max_output=None, writes=(),
          remote=False):
    """`run`, started: the Pending's `result()` waits for it. Runs started together go
    on at the same time (each a process of its own)."""
    label = what or " ".join(["git", *args[:2]])
    located = _located(cwd, label) + lockdown.settings(remote)
    argv = located + list(args)
    environment = git_environ(env, remote)
    program = process.find_program("git", environment)
    if program is None:
        raise GitError("failed", f"{label}: git is not installed (not on PATH)", argv)
    if lockdown.touches_content(args):
        program, argv = _confined(program, located, list(args), environment, cwd, writes, label)
    try:
        running = process.Running(program, argv, environment, timeout, input, max_output, _umask)
    except OSError as error:
        raise GitError("failed", f"{label}: git could not be started: {error}", argv) from None
    return Pending(running, argv, label, timeout, check, max_output)


def _confined(program, located, args, environment, cwd, writes, label):
    """(program, argv) of a run that reads or writes a tree's files: in a jail with the
    repository's plain config, or, where no jail can be made, with each driver the
    repository's config names switched off."""
    frame = jail.frame_of(cwd)
    bwrap = _jails.usable(environment) if frame is not None else None
    if bwrap is not None:
        try:
            copy = _config_copies().copy_for(frame.common_dir, frame.git_dir, program, environment)
        except (repo_config.ConfigError, OSError) as error:
            raise GitError("failed", f"{label}: {error}", located + args) from None
        frame = jail.Frame(frame.work_tree, frame.git_dir, frame.common_dir, tuple(writes))
        environment["TMPDIR"] = "/tmp"      # the jail's own; the user's may be hidden there
        return bwrap, _jails.wrap(program, located + args, frame, copy, environment)
    return program, located + _drivers_off(program, located, environment) + args


def nested_left_alone(worktree):
    """`-c` settings that keep a `git merge` in `worktree` out of its nested repositories.
    git 2.37 and later stash before every merge (`git stash create`), and that looks into
    each submodule `.gitmodules` does not say to ignore, with a `git status` there, which
    runs what that repository's config names. `submodule.<name>.ignore=all` from the
    command line outranks `.gitmodules`; the names are read from it just before (one
    added in between is looked into, in the merge's jail)."""
    environment = git_environ()
    program = process.find_program("git", environment) or "git"
    try:
        names = _config_copies().submodules(os.fspath(worktree), program, environment)
    except (repo_config.ConfigError, OSError):
        names = set()
    return [word for name in sorted(names) for word in ("-c", f"submodule.{name}.ignore=all")]


# What a driver is set to where it cannot be removed (no jail): a filter does nothing, a
# merge driver is git's own three-way merge of text, conflict markers and all. Diff
# drivers need nothing: every diff roost reads is asked --no-textconv --no-ext-diff.
_FILTER_OFF = ("clean=", "smudge=", "process=", "required=false")
_TEXT_MERGE = "git merge-file --marker-size=%L %A %O %B"


def _drivers_off(program, located, environment):
    names = repo_config.driver_names(located, program, environment)
    settings = []
    for name in sorted(names.get("filter", ())):
        for setting in _FILTER_OFF:
            settings += ["-c", f"filter.{name}.{setting}"]
    for name in sorted(names.get("merge", ())):
        settings += ["-c", f"merge.{name}.driver={_TEXT_MERGE}"]
    return settings


def _located(cwd, label):
    """`git -C cwd`, and for a worktree its git dir and work tree named, checked first."""
    if isinstance(cwd, checkouts.Checkout):
        if not os.path.isdir(cwd.path):
            raise GitError("not_found", f"{label}: no directory {cwd.path}")
        checkouts.check(cwd)
        return ["git", "-C", cwd.path, "--git-dir=" + cwd.git_dir, "--work-tree=" + cwd.path]
    cwd = os.fspath(cwd)
    if not os.path.isdir(cwd):
        raise GitError("not_found", f"{label}: no directory {cwd}")
    refuse_linked(cwd, label)
    return ["git", "-C", cwd]


def refuse_linked(directory, label):
    """Refuse a linked worktree (or what looks like one: a link, or a `gitdir:` into some
    `worktrees/`) named by its path alone: its .git file is not to be believed. A main
    checkout whose .git is a file of another kind (a submodule's) is the user's own."""
    dot_git = os.path.join(directory, ".git")
    if os.path.isdir(dot_git) and not os.path.islink(dot_git) or not os.path.lexists(dot_git):
        return
    said = ""
    if not os.path.islink(dot_git):
        try:
            with open(dot_git, "rb") as handle:
                said = os.fsdecode(handle.read(checkouts.MAX_LINK_BYTES)).strip()
        except OSError:
            pass
    target = said[len("gitdir:"):].strip() if said.startswith("gitdir:") else ""
    if not target or os.path.basename(os.path.dirname(os.path.normpath(target))) == "worktrees":
        raise GitError("tampered", f"{label}: {directory} is a linked worktree, and roost runs git there only "
                       "through the repository's own record of it (checkouts.checkout_of)")


def identity_missing(cwd):
    """git's complaint when it knows no author or committer identity here, else None
    (asked after a commit failed, to tell that case apart in words a person can act on)."""
    for variable in ("GIT_AUTHOR_IDENT", "GIT_COMMITTER_IDENT"):
        done = run(["var", variable], cwd, check=False)
        if done.returncode != 0:
            return done.stderr.strip() or f"git var {variable} failed"
    return None


def raise_commit_failure(error, cwd, what):
    """Re-raise the failure of a command that makes a commit, as `no_identity` when that
    is why (git's text says how to set one)."""
    complaint = identity_missing(cwd)
    if complaint is not None:
        raise GitError("no_identity", f"{what}: git knows no identity of yours; set one with "
                       "`git config --global user.name NAME` and `git config --global user.email EMAIL`",
                       error.argv, error.returncode, complaint) from error
    raise error
