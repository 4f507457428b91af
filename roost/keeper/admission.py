"""Whom the keeper serves: the daemon of its home, and no other process (issue 26).

Every job's pty master passes through the keeper's socket, and a master is a keyboard
into that job (and into the person's own `--as-me` shell); `spawn` starts a program
outside every job. So a connection is served only when

- its peer, by the kernel's word (SO_PEERCRED), is the user's own uid and the very
  process that holds the home's `daemon.lock` (found in /proc/locks, not read from the
  lock file, whose text any process of the user may write); and
- its first request is `hello` carrying the keeper's secret: a random key the daemon
  keeps in `keeper.secret` (0600, in roost's home, which no jail sees) and hands the
  keeper on its stdin when it starts it. A later daemon (after a restart or kill -9)
  reads the file and proves itself the same way.

A peer that fails is closed (after one refusal, when it got as far as a request): it
gets no fd and the keeper goes on. What this cannot stop: a process of the user that
runs outside a jail and takes the daemon lock while no daemon runs is then the daemon,
as `roost daemon` started by it would be.

Standard library only: the keeper imports it.
"""

import hmac
import os
import secrets

from roost.unix import files, pidlock, private_socket

SECRET_NAME = "keeper.secret"
# roost's directory of what no job may read or change (roost.jobs.trusted keeps the jobs'
# tokens there too); a roost before kept the secret in the home itself.
PRIVATE = "private"
DAEMON_LOCK = "daemon.lock"


def daemon_pid(home):
    """The pid of the daemon serving `home` now (the holder of its lock), or None."""
    return pidlock.holder(os.path.join(home, DAEMON_LOCK))


def refused(sock, home):
    """Why a new connection is not the daemon's (a text for the log), or None."""
    try:
        pid, uid, _gid = private_socket.peer_credentials(sock)
    except OSError as error:
        return f"its credentials cannot be read ({error.strerror})"
    if uid != os.getuid():
        return f"uid {uid} is not ours"
    daemon = daemon_pid(home)
    if pid != daemon:
        return f"pid {pid} is not the daemon ({'none runs' if daemon is None else daemon})"
    return None


def secret_path(home):
    return os.path.join(home, PRIVATE, SECRET_NAME)


def _read(path):
    try:
        with open(path, "rb") as handle:
            text = handle.read(256).decode("ascii", "replace").strip()
    except OSError:
        return None
    return text or None


def read_secret(home):
    """The keeper's secret as kept in the home (or where a roost before kept it), or None
    when there is none."""
    return _read(secret_path(home)) or _read(os.path.join(home, SECRET_NAME))


def ensure_secret(home):
    """The daemon's side: the secret in the home's private directory, made (0600) when
    there is none yet; one a roost before kept in the home itself is moved there (the
    keeper it started still knows it)."""
    found = _read(secret_path(home))
    if found is not None:
        return found
    earlier = os.path.join(home, SECRET_NAME)
    made = _read(earlier) or secrets.token_hex(32)
    os.makedirs(os.path.join(home, PRIVATE), mode=0o700, exist_ok=True)
    files.write_atomic(secret_path(home), made.encode("ascii") + b"\n", mode=0o600)
    try:
        os.unlink(earlier)
    except FileNotFoundError:
        pass
    return made


def proves(secret, given):
    """Whether a hello's `secret` is the keeper's (compared in constant time)."""
    if not isinstance(given, str) or not secret:
        return False
    return hmac.compare_digest(secret.encode(), given.encode("utf-8", "surrogatepass"))
