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


def holder(path):
    """The pid of the process that holds the lock at `path` (the kernel's word, from
    /proc/locks: the file's pid line could be written by anyone who may write the file),
    or None when no one holds it."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    wanted = f"{os.major(info.st_dev):02x}:{os.minor(info.st_dev):02x}:{info.st_ino}"
    try:
        with open("/proc/locks", encoding="ascii", errors="replace") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return None
    for line in lines:
        fields = line.split()
        # "1: FLOCK  ADVISORY  WRITE 17452 fe:00:2146330 0 EOF"; a waiter's line has "->"
        if len(fields) >= 6 and fields[1] == "FLOCK" and fields[5] == wanted and fields[4].isdigit():
            return int(fields[4])
    return None
