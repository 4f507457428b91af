"""What the git tests share: real repositories made with the real `git` in temp dirs,
each with an identity of its own in its config (never the machine's), and a git
configuration isolated from the user's and the system's."""

import os
import subprocess
import sys

import pytest

from conftest import ROOT

# The variables that would give git an identity or another repository from outside.
_OUTSIDE = ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "EMAIL",
            "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_CONFIG", "GIT_CONFIG_PARAMETERS",
            "GIT_CONFIG_COUNT")


@pytest.fixture(autouse=True)
def isolated_git(tmp_path, monkeypatch):
    """No global or system git configuration: a test sees only what it set up."""
    config = tmp_path / "global.gitconfig"
    config.write_text("")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for name in _OUTSIDE:
        monkeypatch.delenv(name, raising=False)
    return config


def git(cwd, *args, input=None, check=True):
    """Run the real git in `cwd` (a test's own hand, not roost's); its stdout, stripped."""
    done = subprocess.run(["git", *args], cwd=cwd, input=input, capture_output=True, text=True, timeout=60)
    if check and done.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed ({done.returncode}): {done.stderr}")
    return done.stdout.strip()


def write(path, text):
    os.makedirs(os.path.dirname(str(path)), exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)


def read(path):
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def make_repo(path, files=None, identity=True):
    """A repository at `path` on branch main, with one commit of `files` {name: text}."""
    os.makedirs(path, exist_ok=True)
    git(path, "init", "--quiet", "--initial-branch=main")
    if identity:
        git(path, "config", "user.name", "Roost Test")
        git(path, "config", "user.email", "test@roost.invalid")
    for name, text in (files or {"README": "a repository\n", "src/app.txt": "one\ntwo\nthree\n"}).items():
        write(os.path.join(path, name), text)
    git(path, "add", "-A")
    if identity:
        git(path, "commit", "--quiet", "-m", "first")
    return str(path)


def commit_file(cwd, name, text, message=None):
    """Write a file and commit it by hand; the new commit's sha."""
    write(os.path.join(cwd, name), text)
    git(cwd, "add", "--", name)
    git(cwd, "commit", "--quiet", "-m", message or f"change {name}")
    return git(cwd, "rev-parse", "HEAD")


def sha(cwd, ref):
    return git(cwd, "rev-parse", "--verify", ref)


def run_python(code, *args, env=None, cwd=None):
    """`code` in a fresh interpreter with roost importable (for a land to be killed in)."""
    return subprocess.Popen([sys.executable, "-c", code, *[str(arg) for arg in args]], cwd=cwd,
                            env={**os.environ, "PYTHONPATH": ROOT, **(env or {})},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def place(repo, tree):
    """A linked worktree as roost names it to git: its Checkout, from the repository's
    record (a bare path of one is refused)."""
    from roost import git as roost_git

    return roost_git.checkout_of(repo, tree.path)
