"""A process's place in the process tree, read from /proc (Linux): its parent, its
session and its start time (/proc/<pid>/stat fields 4, 6 and 22). Standard library only.

The start time (clock ticks since boot) tells a pid's processes apart: a pid reused by
a later process has a later start time, so (pid, start) names one process for good.
"""

import os


class ProcessStat:
    __slots__ = ("pid", "parent", "session", "start")

    def __init__(self, pid, parent, session, start):
        self.pid = pid
        self.parent = parent
        self.session = session
        self.start = start


def read_stat(pid):
    """The ProcessStat of `pid`, or None when there is no such process (or it cannot be
    read: another pid namespace, /proc not mounted)."""
    if pid <= 0:
        return None
    try:
        fd = os.open(f"/proc/{pid}/stat", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        data = os.read(fd, 1024)
    except OSError:
        return None
    finally:
        os.close(fd)
    # Field 2 is the command's name in parentheses and may hold spaces or parentheses of
    # its own: the fields after it start after the last ")".
    close = data.rfind(b")")
    if close < 0:
        return None
    fields = data[close + 2:].split()
    try:
        # fields[0] is field 3 (the state): field N is fields[N - 3].
        return ProcessStat(pid, int(fields[1]), int(fields[3]), int(fields[19]))
    except (IndexError, ValueError):
        return None


def pid_namespace(pid):
    """The inode of `pid`'s PID namespace (/proc/<pid>/ns/pid), or None when it cannot
    be read. A process cannot leave its PID namespace: a jailed job's processes are in
    their jail's (roost.unix.bwrap), never in the daemon's."""
    try:
        return os.stat(f"/proc/{pid}/ns/pid").st_ino
    except OSError:
        return None
