"""Where a job's records are, from the job's own environment (CLAUDE_CONFIG_DIR,
CODEX_HOME, PI_CODING_AGENT_DIR, HOME: the user's environment with the launch's own
variables on top, as the job got it) and the session ids it has had.

A profile names its reader with `spendFrom`; the built-in profiles set theirs:

| spendFrom | the job's files |
|---|---|
| `claude-code` | `<config>/projects/*/<id>.jsonl` and `<config>/projects/*/<id>/subagents/*.jsonl` for each session id |
| `codex` | `<CODEX_HOME>/sessions/*/*/*/rollout-*-<id>.jsonl` for each session id, and the rollouts forked from them |
| `pi` | every file of the job's session directory (`--session-dir`, as sessionFrom's `newestFile` names it), else `<agent dir>/sessions/*/*_<id>.jsonl` |
| `aider` | the `--analytics-log` file its argv names |
| `report` | none: the agent's own `usage` reports |

Every session id the job has had counts (`spendSessions` in its record: the launch's
id, each new one the session finder or Claude Code's status line found), so a resume
or a `/clear` that writes under a new id still counts as the job's.
"""

import glob
import os
import re

from roost.bundle import userenv
from roost.jobs.profiles import SPEND_FROM as KINDS  # noqa: F401  (the readers: roost.spend.readers)
from roost.jobs.sessions import JOB_DIR

SESSION_ID = re.compile(r"^[0-9A-Za-z][0-9A-Za-z_-]{7,80}$")
_UNSAFE = re.compile(r"[^A-Za-z0-9]")


def job_env(launch):
    env = dict(userenv.user_environ())
    env.update(launch.get("env") or {})
    return env


def _home(env):
    return env.get("HOME") or os.path.expanduser("~")


def claude_dir(env):
    return env.get("CLAUDE_CONFIG_DIR") or os.path.join(_home(env), ".claude")


def codex_dir(env):
    return env.get("CODEX_HOME") or os.path.join(_home(env), ".codex")


def pi_dir(env):
    return env.get("PI_CODING_AGENT_DIR") or os.path.join(_home(env), ".pi", "agent")


def claude_project(cwd):
    """The folder Claude Code keeps a working directory's transcripts in (every
    character but letters and digits made a dash)."""
    return _UNSAFE.sub("-", cwd)


def _argv_value(argv, flag):
    for index, word in enumerate(argv or ()):
        if word == flag and index + 1 < len(argv):
            return argv[index + 1]
        if isinstance(word, str) and word.startswith(flag + "="):
            return word.split("=", 1)[1]
    return None


def files(kind, launch, job_dir, cwd, sessions):
    """(the paths of the job's records found now, the directories to watch for new or
    changed ones)."""
    env = job_env(launch)
    ids = [session for session in sessions if isinstance(session, str) and SESSION_ID.match(session)]
    if kind == "claude-code":
        projects = os.path.join(claude_dir(env), "projects")
        found = []
        for session in ids:
            found += glob.glob(os.path.join(glob.escape(projects), "*", session + ".jsonl"))
            found += glob.glob(os.path.join(glob.escape(projects), "*", session, "subagents", "*.jsonl"))
        watched = {projects, os.path.join(projects, claude_project(cwd))} | {os.path.dirname(path) for path in found}
        return sorted(set(found)), watched
    if kind == "codex":
        sessions_dir = os.path.join(codex_dir(env), "sessions")
        found = []
        for session in ids:
            found += glob.glob(os.path.join(glob.escape(sessions_dir), "*", "*", "*", f"rollout-*-{session}.jsonl"))
        watched = {os.path.dirname(path) for path in found}
        found += codex_children(watched, set(ids), set(found))
        return sorted(set(found)), watched
    if kind == "pi":
        directory = pi_session_dir(launch, job_dir)
        if directory is not None:
            return sorted(glob.glob(os.path.join(glob.escape(directory), "*.jsonl"))), {directory}
        base = os.path.join(pi_dir(env), "sessions")
        found = []
        for session in ids:
            found += glob.glob(os.path.join(glob.escape(base), "*", f"*_{session}.jsonl"))
        return sorted(set(found)), {os.path.dirname(path) for path in found}
    if kind == "aider":
        path = _argv_value(launch.get("argv"), "--analytics-log")
        if not path:
            return [], set()
        path = path.replace(JOB_DIR, job_dir)
        if not os.path.isabs(path):
            path = os.path.join(cwd, path)
        return ([path] if os.path.exists(path) else []), {os.path.dirname(path)}
    return [], set()


def pi_session_dir(launch, job_dir):
    source = launch.get("sessionFrom") or {}
    directory = source.get("newestFile") if isinstance(source, dict) else None
    if not directory:
        directory = _argv_value(launch.get("argv"), "--session-dir")
    return directory.replace(JOB_DIR, job_dir) if directory else None


def project_of(cwd):
    """The repository a working directory belongs to (a linked worktree's main one), or
    the directory itself outside any: read from `.git` as git leaves it, no git run."""
    directory = cwd
    while directory and directory != os.path.dirname(directory):
        marker = os.path.join(directory, ".git")
        if os.path.isdir(marker):
            return directory
        if os.path.isfile(marker):
            try:
                with open(marker, encoding="utf-8", errors="replace") as handle:
                    text = handle.read(4096)
            except OSError:
                return directory
            match = re.match(r"gitdir:\s*(.+?)\s*$", text, re.M)
            if match:
                gitdir = os.path.normpath(os.path.join(directory, match.group(1)))
                parts = gitdir.split(os.sep)
                if "worktrees" in parts:       # <main>/.git/worktrees/<name>
                    return os.path.dirname(os.sep.join(parts[:len(parts) - parts[::-1].index("worktrees") - 1]))
            return directory
        directory = os.path.dirname(directory)
    return cwd


_parents = {}          # a rollout's path -> the ids its session_meta names as its parents
_PARENTS_KEPT = 4096


def codex_children(directories, ids, known):
    """The rollouts in `directories` forked from, or spawned as subagents by, a session
    of `ids` (and from those, in turn)."""
    candidates = []
    for directory in directories:
        candidates += glob.glob(os.path.join(glob.escape(directory), "rollout-*.jsonl"))
    children, grew = [], True
    while grew:
        grew = False
        for path in candidates:
            if path in known or path in children:
                continue
            own, parents = _rollout_parents(path)
            if parents & ids:
                children.append(path)
                if own:
                    ids.add(own)
                grew = True
    return children


def _rollout_parents(path):
    cached = _parents.get(path)
    if cached is not None:
        return cached
    from roost import codec

    try:
        with open(path, "rb") as handle:
            first = handle.readline(1 << 20)
        meta = codec.decode(first).get("payload") or {}
    except (OSError, ValueError, AttributeError):
        return None, set()
    parents = set()
    if isinstance(meta.get("forked_from_id"), str):
        parents.add(meta["forked_from_id"])
    source = meta.get("source")
    spawn = ((source or {}).get("subagent") or {}) if isinstance(source, dict) else {}
    spawn = spawn.get("thread_spawn") if isinstance(spawn, dict) and isinstance(spawn.get("thread_spawn"), dict) else spawn
    if isinstance(spawn, dict) and isinstance(spawn.get("parent_thread_id"), str):
        parents.add(spawn["parent_thread_id"])
    if len(_parents) > _PARENTS_KEPT:
        _parents.clear()
    found = _parents[path] = (meta.get("id") if isinstance(meta.get("id"), str) else None, parents)
    return found
