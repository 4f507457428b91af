"""A task's way out besides a local land (M60): push its branch, open a pull request.

Both through programs, never a library: `git push` with the user's own credential
helpers (dulwich would need its own credentials) and no hook, and GitHub's `gh pr create`,
which keeps the user's login. Neither may ask anything: git's prompts are off
(command.py), and gh gets `GH_PROMPT_DISABLED` and no terminal; each runs in a session of
its own with a bounded timeout, in the user's environment.
"""

from roost.git import command, process
from roost.git.errors import GitError
from roost.git.names import branch_ref, short_branch
from roost.git.repository import require_sha

PUSH_S = 300.0
PR_S = 120.0
_CHDIR_SCRIPT = 'cd -- "$1" || exit 126; shift; exec "$@"'
_CHDIR_SCRIPT_NAME = "sh"


def remotes(repo):
    """The repository's remotes, by name."""
    return command.run(["remote"], repo.root, what="git remote").text().split()


def default_remote(repo):
    """`origin`, or the one remote there is; GitError("not_found") otherwise."""
    names = remotes(repo)
    if "origin" in names:
        return "origin"
    if len(names) == 1:
        return names[0]
    if not names:
        raise GitError("not_found", f"{repo.root} has no remote to push to")
    raise GitError("not_found", f"{repo.root} has several remotes and none is `origin`: {', '.join(names)}")


def push_branch(repo, branch, remote=None, timeout=PUSH_S, tip=None):
    """Push `branch` to the same name on `remote` (default_remote when None); returns
    (remote, the sha pushed). With `tip` (a sha), exactly that commit is pushed, wherever
    the branch has gone since. A push the remote refuses is GitError("failed") with its
    words."""
    ref = branch_ref(branch)
    remote = remote or default_remote(repo)
    if remote.startswith("-") or not remote.strip():
        raise GitError("bad_request", f"not a remote's name: {remote!r}")
    tip = tip or require_sha(repo, ref)
    command.run(["push", "--porcelain", "--no-verify", "--no-recurse-submodules", "--", remote, f"{tip}:{ref}"],
                repo.root, timeout=timeout, what="git push", remote=True)
    return remote, tip


def open_pull_request(cwd, base, branch, title, body, timeout=PR_S):
    """`gh pr create` for `branch` (pushed already) into `base`, run in `cwd` (a
    directory of the repository, where gh finds which one it is); returns the pull
    request's address, as gh prints it."""
    env = command.git_environ({"GH_PROMPT_DISABLED": "1", "GH_NO_UPDATE_NOTIFIER": "1", "NO_COLOR": "1"})
    program = process.find_program("gh", env)
    shell = process.find_program("sh", env) or "/bin/sh"
    if program is None:
        raise GitError("not_found", "gh (GitHub's command line) is not installed: it is not on PATH")
    # `--name=value`: a title or body (an agent may have written the task's) is that
    # option's value whatever it starts with
    argv = ["gh", "pr", "create", "--base=" + short_branch(branch_ref(base)),
            "--head=" + short_branch(branch_ref(branch)), "--title=" + title, "--body=" + body]
    try:
        # gh finds its repository from its working directory, and posix_spawn cannot
        # set one: a fixed script changes to it and execs gh, every word passed as an
        # argument of its own (nothing of the title or body is ever parsed by sh).
        ended = process.run(shell, [_CHDIR_SCRIPT_NAME, "-c", _CHDIR_SCRIPT, _CHDIR_SCRIPT_NAME, cwd, program,
                                    *argv[1:]], env, timeout)
    except OSError as error:
        raise GitError("failed", f"gh could not be started: {error}", argv) from None
    stderr = ended.stderr.decode("utf-8", "replace")
    if ended.timed_out:
        raise GitError("timeout", f"gh pr create: no answer after {timeout:g} s (killed)", argv)
    if ended.returncode != 0:
        raise GitError("failed", f"gh pr create failed (exit {ended.returncode})", argv, ended.returncode, stderr)
    lines = [line.strip() for line in ended.stdout.decode("utf-8", "replace").splitlines() if line.strip()]
    if not lines:
        raise GitError("failed", "gh pr create printed no address", argv, ended.returncode, stderr)
    return lines[-1]
