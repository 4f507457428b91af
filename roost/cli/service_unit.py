"""The `systemd --user` unit that starts roost's daemon at login (issue 19 item 2), so
that after a reboot each job resumes without the user typing a command.

The unit runs this very roost (the frozen binary when frozen, else this checkout's
`python -m roost`, as roost.jobs.roost_on_path finds itself) for the home this roost
uses now (ROOST_HOME), with the PATH of the shell that installed it: the daemon's jobs
get the daemon's environment (roost.bundle.userenv), and a bare systemd PATH would find
no agent.

How roost's processes lie decides the unit's shape:
- `ExecStart=roost daemon`: starts the daemon detached and returns once it answers, or
  returns at once when a daemon already answers on the socket (the daemon's lock
  refuses a second one besides): never a second daemon. So the service is `oneshot`
  with `RemainAfterExit`, and no process of it is its main one.
- `KillMode=process`: the daemon starts the keeper, and the keeper every job; all of
  them stay in the unit's control group. systemd's default would kill the whole group
  when the unit stops; roost's promise is that a daemon that goes (a restart, an
  upgrade) loses no job. With `process` and no main process, systemd kills nothing.
- `ExecStop=roost shutdown --keep-workers`: the daemon leaves, its jobs stay with the
  keeper for the next daemon; the next start brings them back (roost.jobs.adoption,
  and roost.jobs.recovery after a reboot).
"""

import os
import shutil
import subprocess
import sys

from roost import paths
from roost.bundle import files
from roost.unix.files import write_atomic

UNIT_NAME = "roost.service"
UNIT_MODE = 0o644
SYSTEMCTL_TIMEOUT_S = 30


def unit_path(env):
    config = env.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(config, "systemd", "user", UNIT_NAME)


def roost_argv():
    """The argv that runs this roost, and the environment it needs for that."""
    if files.is_frozen():
        return [sys.executable], {}
    return [sys.executable, "-m", "roost"], {"PYTHONPATH": files.bundle_dir()}


class Unwritable(Exception):
    """A value no unit line can hold (a newline in a path)."""


def _escaped(value):
    if any(char in value for char in "\n\r\0"):
        raise Unwritable(f"{value!r} has a line break or NUL: no unit line can hold it")
    # `%` is a specifier everywhere; the quotes are C-style.
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%")


def exec_line(argv):
    """An Exec*= value: each word quoted, `$` doubled (no variable is expanded)."""
    return " ".join(f'"{_escaped(word).replace("$", "$$")}"' for word in argv)


def environment_line(name, value):
    return f'"{name}={_escaped(value)}"'


def unit_text(env):
    argv, extra = roost_argv()
    environment = {"ROOST_HOME": paths.home(env), "PATH": env.get("PATH") or os.defpath, **extra}
    lines = [
        "# Written by `roost service install`; `roost service remove` removes it.",
        "[Unit]",
        "Description=roost: the daemon that runs and keeps coding agents (started at login)",
        "",
        "[Service]",
        "Type=oneshot",
        "RemainAfterExit=yes",
        *(f"Environment={environment_line(name, value)}" for name, value in environment.items()),
        f"ExecStart={exec_line(argv + ['daemon'])}",
        f"ExecStop={exec_line(argv + ['shutdown', '--keep-workers'])}",
        # The keeper and the jobs outlive the daemon (the module's docstring).
        "KillMode=process",
        "",
        "[Install]",
        "WantedBy=default.target",
        "",
    ]
    return "\n".join(lines)


def systemd_runs(env):
    """Whether systemd runs for this user: systemctl is there and the user's manager
    answers (`is-system-running` says a state: running, degraded, ...)."""
    if shutil.which("systemctl", path=env.get("PATH")) is None:
        return False
    done = systemctl(env, "is-system-running")
    return done.stdout.strip() not in ("", "offline") if done is not None else False


def systemctl(env, *words):
    """`systemctl --user WORDS...` (an argv, never a shell line); None when it cannot run."""
    try:
        return subprocess.run(["systemctl", "--user", *words], env=env, capture_output=True, text=True,
                              timeout=SYSTEMCTL_TIMEOUT_S, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None


def install(env):
    """Write the unit (when it differs) and enable it where systemd runs: the result."""
    path = unit_path(env)
    text = unit_text(env).encode()
    try:
        with open(path, "rb") as handle:
            unchanged = handle.read() == text
    except FileNotFoundError:
        unchanged = False
    if not unchanged:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        write_atomic(path, text, mode=UNIT_MODE)
    result = {"unit": path, "written": not unchanged, "home": paths.home(env), "systemd": systemd_runs(env),
              "enabled": False}
    if not result["systemd"]:
        result["note"] = ("systemd does not run for this user here: the unit is written; where it does, "
                          "`systemctl --user daemon-reload && systemctl --user enable roost.service` "
                          "starts roost at login")
        return result
    for words in (("daemon-reload",), ("enable", UNIT_NAME)):
        done = systemctl(env, *words)
        if done is None or done.returncode != 0:
            result["note"] = f"`systemctl --user {' '.join(words)}` failed: " + \
                ((done.stderr or done.stdout).strip() if done is not None else "it could not run")
            return result
    result["enabled"] = True
    result["note"] = "enabled: roost's daemon starts at login (`systemctl --user start roost` starts it now)"
    return result


def remove(env):
    """Disable the unit where systemd runs, then remove it: the result."""
    path = unit_path(env)
    result = {"unit": path, "removed": os.path.exists(path), "systemd": systemd_runs(env), "disabled": False}
    if result["systemd"] and result["removed"]:
        done = systemctl(env, "disable", UNIT_NAME)
        result["disabled"] = done is not None and done.returncode == 0
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    if result["systemd"]:
        systemctl(env, "daemon-reload")
    result["note"] = "removed" if result["removed"] else "no unit was installed"
    return result
