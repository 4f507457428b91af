"""Claude Code's status line in a job of roost's (the built-in `claude` profile starts
Claude Code with this as its statusLine command). It keeps what Claude Code gives its
status line that roost reads (the session id it is in, its plan's 5-hour and 7-day
windows) in the job's directory, then shows the user's own status line unchanged: the
statusLine command of the user's Claude Code settings (the project's local settings,
the project's, then the user's), run with the same input, its output printed as is.
Outside a job it only shows the user's.

Usage:
  roost statusline [claude]
  roost statusline --help
"""

import json
import os
import subprocess

from roost import clock, job_identity
from roost.unix.files import write_atomic

STATUS_FILE = "claude-status.json"     # roost.spend.tracker reads it
MAX_INPUT = 1 << 20
OWN_TIMEOUT_S = 5.0


def main(opts, ctx):
    raw = _read_input()
    try:
        status = json.loads(raw.decode("utf-8", "replace")) if raw else {}
    except ValueError:
        status = {}
    if not isinstance(status, dict):
        status = {}
    job_dir = job_identity.job_dir(ctx.env)
    if job_dir and os.path.isdir(job_dir):
        kept = {"at": clock.now_ms(), "session_id": status.get("session_id"),
                "rate_limits": status.get("rate_limits"), "model": status.get("model")}
        try:
            write_atomic(os.path.join(job_dir, STATUS_FILE), json.dumps(kept).encode())
        except OSError:
            pass        # the status line still shows; roost reads the next one
    command, cwd = users_command(ctx.env, status)
    if command:
        ctx.stdout.write(run_own(command, raw, cwd, ctx.env))
    return 0


def _read_input():
    chunks, size = [], 0
    while size < MAX_INPUT:
        chunk = os.read(0, 65536)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def users_command(env, status):
    """(the user's own statusLine command, the directory Claude Code works in), or
    (None, cwd): the first of the settings Claude Code reads that has one, skipping
    roost's own."""
    workspace = status.get("workspace") if isinstance(status.get("workspace"), dict) else {}
    cwd = workspace.get("project_dir") or workspace.get("current_dir") or status.get("cwd") or os.getcwd()
    config = env.get("CLAUDE_CONFIG_DIR") or os.path.join(env.get("HOME") or os.path.expanduser("~"), ".claude")
    for path in (os.path.join(cwd, ".claude", "settings.local.json"), os.path.join(cwd, ".claude", "settings.json"),
                 os.path.join(config, "settings.json")):
        try:
            with open(path, encoding="utf-8") as handle:
                settings = json.load(handle)
        except (OSError, ValueError):
            continue
        line = settings.get("statusLine") if isinstance(settings, dict) else None
        command = line.get("command") if isinstance(line, dict) else None
        if isinstance(command, str) and command.strip() and "roost statusline" not in command:
            return command, cwd
    return None, cwd


def run_own(command, raw, cwd, env):
    """The user's own status line's output. It is the user's own shell command, written
    for Claude Code, which runs it with a shell: so does this, as it is."""
    try:
        done = subprocess.run(["/bin/sh", "-c", command], input=raw, capture_output=True, timeout=OWN_TIMEOUT_S,
                              cwd=cwd if os.path.isdir(cwd) else None, env=dict(env))
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return done.stdout.decode("utf-8", "replace")
