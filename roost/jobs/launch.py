"""What a launch needs beyond its arguments (roost.jobs.launch_args): names, the check
that its program can run, and the job's environment (CONTRACT.md "A job's environment")."""

import os
import shutil

from roost import job_identity
from roost.bundle import userenv
from roost.jobs import roost_on_path
from roost.errors import bad_request

NAME_LIMIT = 200
# M44: the hub's own agent's name cannot be taken by a session.
RESERVED_NAMES = ("concierge",)

# The pty says the window size; inherited values would contradict it.
_SIZE_NAMES = ("COLUMNS", "LINES")
TERM = "xterm-256color"


def fold_name(name):
    """Spaces folded, cut at 200 (spec `rename`)."""
    return " ".join(name.split())[:NAME_LIMIT]


def check_name(name):
    if name.lower() in RESERVED_NAMES:
        raise bad_request(f"the name {name!r} is reserved for the hub's own agent")
    return name


def one_line(text, limit):
    return " ".join(text.split())[:limit]


def default_name(argv, profile):
    """A profile's job is named after the profile, any other after its program (`sh`,
    `claude`): the name a person types in `roost reply sh ...`."""
    if profile:
        return fold_name(profile)
    return fold_name(os.path.basename(argv[0])) or "job"


def check_runnable(program, cwd, env):
    """Refuse a command that cannot be found before a job is made for it (the keeper
    would refuse it too; this says so without leaving a failed job behind)."""
    if "/" in program:
        path = program if os.path.isabs(program) else os.path.join(cwd, program)
        if not os.path.isfile(path) or not os.access(path, os.X_OK):
            raise bad_request(f"cannot run {program}: no such executable file")
        return
    search = env.get("PATH", os.defpath)
    # Relative PATH entries mean the job's cwd, where it will run.
    search = os.pathsep.join(entry if os.path.isabs(entry) else os.path.join(cwd, entry)
                             for entry in search.split(os.pathsep))
    if shutil.which(program, path=search) is None:
        raise bad_request(f"cannot run {program}: not found on PATH")


def job_environ(job, socket_path, job_dir, roost_bin=None):
    """The user's environment (not the daemon's changes to it), the launch's own
    variables, then the job's identity under both names; `roost_bin` (the directory
    of roost's own `roost`, roost.jobs.roost_on_path) first on its PATH."""
    env = userenv.user_environ()
    for name in job_identity.NAMES + _SIZE_NAMES:
        env.pop(name, None)
    env["TERM"] = TERM
    env.update(job.launch.get("env") or {})
    if roost_bin:
        roost_on_path.first_on_path(env, roost_bin)
    # The person's own shell: its CLI sends the person's ops (the daemon decides).
    env.update(job_identity.environment(job.id, job.token, socket_path, job_dir, bool(job.launch.get("person"))))
    return env
