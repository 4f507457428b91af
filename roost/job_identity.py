"""A job's identity in its environment (CONTRACT.md "A job's environment"): which job a
process runs in, the token it speaks for it with, the daemon's socket and the job's
directory, under roost's names and the older `PI_` ones. Set by roost when it starts a
job (roost.jobs.launch), never inherited from a daemon's or keeper's own environment (a
daemon started from inside a job carries that job's), and read by every client that acts
for its job (the CLI, `roost mcp`). A leaf, standard library only: the keeper uses it.

roost_agent.py, one standard-library file copied beside an agent, reads the same names
on its own (it imports nothing of roost's).
"""

# name -> the older name that means the same
_NAMES = {"ROOST_JOB_ID": "PI_JOB_ID", "ROOST_JOB_TOKEN": "PI_JOB_TOKEN", "ROOST_SOCKET": "PI_DAEMON_SOCK",
          "ROOST_JOB_DIR": "PI_JOB_DIR"}
# The person's own shell (a job a person started to type in): its CLI sends the
# person's ops, and the daemon decides from the peer's process.
PERSON = "ROOST_JOB_PERSON"
# Every variable of the identity, both names: what a job's environment is cleaned of
# before its own are set.
NAMES = (*_NAMES, PERSON, *_NAMES.values())


def environment(job_id, token, socket_path, job_dir, person=False):
    """The variables a job is started with, under both names."""
    values = {"ROOST_JOB_ID": job_id, "ROOST_JOB_TOKEN": token, "ROOST_SOCKET": socket_path,
              "ROOST_JOB_DIR": job_dir}
    env = dict(values)
    if person:
        env[PERSON] = "1"
    env.update({_NAMES[name]: value for name, value in values.items()})
    return env


def without(env):
    """`env` with no variable of a job's identity."""
    return {name: value for name, value in env.items() if name not in NAMES}


def job_id(env):
    """The id of the job this process runs in (either name), or None."""
    return env.get("ROOST_JOB_ID") or env.get("PI_JOB_ID") or None


def job_dir(env):
    """The directory of the job this process runs in (either name), or None."""
    return env.get("ROOST_JOB_DIR") or env.get("PI_JOB_DIR") or None


def job_identity(env):
    """(job id, token) of the job this process runs in, or None outside a job."""
    token = env.get("ROOST_JOB_TOKEN") or env.get("PI_JOB_TOKEN")
    found = job_id(env)
    return (found, token) if found and token else None


def is_persons_shell(env):
    """A job's process, in the person's own shell (not an agent's)."""
    return env.get(PERSON) == "1"
