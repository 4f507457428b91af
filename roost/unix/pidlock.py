"""A lock file held for a process's whole life (flock), with the holder's pid in it: one
daemon, and one keeper, per home. Standard library only (the keeper uses it too)."""

import fcntl
import os


def take(path, note=None):
    """The lock's fd, or None when another process holds it. The kernel drops the lock
    when the process dies, however it dies: no stale lock to clean up. A `note` is
    written on the line after the pid (the daemon's: its version, for the CLI)."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    os.ftruncate(fd, 0)
    os.write(fd, f"{os.getpid()}\n".encode() + (f"{note}\n".encode() if note else b""))
    return fd
