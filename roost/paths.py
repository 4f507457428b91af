"""Where roost keeps things (CONTRACT.md "Where things live"). Standard library only:
the CLI imports this on its fast path."""

import os

# sockaddr_un.sun_path is 108 bytes on Linux, including the terminating NUL.
MAX_SOCKET_PATH = 107


def home(env=None):
    env = os.environ if env is None else env
    if env.get("ROOST_HOME"):
        return os.path.abspath(env["ROOST_HOME"])
    state = env.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return os.path.join(state, "roost")


def default_socket(home_dir, env=None):
    """The socket of the daemon for this home.

    A home too deep for a unix socket gets its socket under the runtime directory
    instead, in a 0700 directory named after a hash of the home, so the path is still
    derived from the home alone and every client finds it."""
    path = os.path.join(home_dir, "roost.sock")
    if len(os.fsencode(path)) <= MAX_SOCKET_PATH:
        return path
    import hashlib

    env = os.environ if env is None else env
    digest = hashlib.sha256(os.fsencode(home_dir)).hexdigest()[:16]
    base = env.get("XDG_RUNTIME_DIR") or f"/tmp/roost-{os.getuid()}"
    return os.path.join(base, f"roost-{digest}", "roost.sock")


def socket_path(env=None, override=None):
    """The socket a client talks to: --socket, else ROOST_SOCKET, else the home's."""
    env = os.environ if env is None else env
    if override:
        return override
    if env.get("ROOST_SOCKET"):
        return env["ROOST_SOCKET"]
    return default_socket(home(env), env)


def config_file(env=None):
    env = os.environ if env is None else env
    in_home = os.path.join(home(env), "roost.json")
    if os.path.exists(in_home):
        return in_home
    config = env.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(config, "roost", "roost.json")


def jobs_dir(home_dir):
    return os.path.join(home_dir, "jobs")


def job_dir(home_dir, job_id):
    return os.path.join(home_dir, "jobs", job_id)
