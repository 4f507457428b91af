"""Which system call a thread is blocked in, from /proc/<pid>/task/<tid>/syscall (Linux).
Standard library only: the keeper imports it.

The file reads `running`, or `NR ARG1 .. ARG6 SP PC` (hex arguments) for a thread
blocked in call NR, or `-1 SP PC` for one blocked outside a call (a page fault).
Reading it needs ptrace rights over the thread (PTRACE_MODE_ATTACH): its owner, and
under Yama's ptrace_scope=1 only an ancestor (the keeper is every job's) or root.

Call numbers are the architecture's; the calls named here are those that say what a
thread waits on. One this table does not know is named by its number.
"""

import os
import platform

# What a blocked call means for a wait on the terminal: a read of one file (its fd is
# argument 1), a wait on several (poll, select, epoll), a sleep, a wait for a child.
READS = "read"
POLLS = "poll"
SELECTS = "select"
EPOLLS = "epoll"
SLEEPS = "sleep"
WAITS_CHILD = "child"
OPAQUE = "opaque"        # a wait on files whose set cannot be read (io_uring): maybe the terminal
OTHER = "other"

_X86_64 = {
    0: ("read", READS), 17: ("pread64", READS), 19: ("readv", READS), 295: ("preadv", READS),
    327: ("preadv2", READS),
    7: ("poll", POLLS), 271: ("ppoll", POLLS),
    23: ("select", SELECTS), 270: ("pselect6", SELECTS),
    232: ("epoll_wait", EPOLLS), 281: ("epoll_pwait", EPOLLS), 441: ("epoll_pwait2", EPOLLS),
    35: ("nanosleep", SLEEPS), 230: ("clock_nanosleep", SLEEPS), 34: ("pause", SLEEPS),
    130: ("rt_sigsuspend", SLEEPS), 128: ("rt_sigtimedwait", SLEEPS),
    61: ("wait4", WAITS_CHILD), 247: ("waitid", WAITS_CHILD),
    1: ("write", OTHER), 20: ("writev", OTHER), 202: ("futex", OTHER), 43: ("accept", OTHER),
    288: ("accept4", OTHER), 42: ("connect", OTHER), 45: ("recvfrom", OTHER), 47: ("recvmsg", OTHER),
    44: ("sendto", OTHER), 46: ("sendmsg", OTHER), 73: ("flock", OTHER), 72: ("fcntl", OTHER),
    74: ("fsync", OTHER), 426: ("io_uring_enter", OPAQUE), 2: ("open", OTHER), 257: ("openat", OTHER),
    16: ("ioctl", OTHER), 24: ("sched_yield", OTHER), 59: ("execve", OTHER),
}
# arm64 has the generic table: no poll, select or epoll_wait, only their p- forms.
_AARCH64 = {
    63: ("read", READS), 67: ("pread64", READS), 65: ("readv", READS), 69: ("preadv", READS),
    286: ("preadv2", READS),
    73: ("ppoll", POLLS), 72: ("pselect6", SELECTS),
    22: ("epoll_pwait", EPOLLS), 441: ("epoll_pwait2", EPOLLS),
    101: ("nanosleep", SLEEPS), 115: ("clock_nanosleep", SLEEPS), 133: ("rt_sigsuspend", SLEEPS),
    137: ("rt_sigtimedwait", SLEEPS),
    260: ("wait4", WAITS_CHILD), 95: ("waitid", WAITS_CHILD),
    64: ("write", OTHER), 66: ("writev", OTHER), 98: ("futex", OTHER), 202: ("accept", OTHER),
    242: ("accept4", OTHER), 203: ("connect", OTHER), 207: ("recvfrom", OTHER), 212: ("recvmsg", OTHER),
    206: ("sendto", OTHER), 211: ("sendmsg", OTHER), 32: ("flock", OTHER), 25: ("fcntl", OTHER),
    82: ("fsync", OTHER), 426: ("io_uring_enter", OPAQUE), 56: ("openat", OTHER), 29: ("ioctl", OTHER),
    124: ("sched_yield", OTHER), 221: ("execve", OTHER),
}
TABLES = {"x86_64": _X86_64, "aarch64": _AARCH64, "arm64": _AARCH64}
TABLE = TABLES.get(platform.machine())


class Call:
    """A thread's blocked call: its name, what kind of wait it is (READS, POLLS, ...)
    and its six arguments (ints)."""

    __slots__ = ("name", "kind", "args")

    def __init__(self, name, kind, args):
        self.name = name
        self.kind = kind
        self.args = args


RUNNING = "running"      # what read_call gives for a thread on a CPU (or about to be)
OUTSIDE = "outside"      # blocked, but not in a system call (a page fault)


def parse(text, table=TABLE):
    """The Call (or RUNNING, OUTSIDE) a syscall file's `text` says; None for a text it
    cannot read (an architecture without a table included)."""
    fields = text.split()
    if not fields:
        return None
    if fields[0] == "running":
        return RUNNING
    try:
        number = int(fields[0])
    except ValueError:
        return None
    if number < 0:
        return OUTSIDE
    if table is None:
        return None
    try:
        args = tuple(int(field, 16) for field in fields[1:7])
    except ValueError:
        return None
    name, kind = table.get(number, (f"call {number}", OTHER))
    return Call(name, kind, args)


def read_call(pid, tid=None):
    """The call thread `tid` of `pid` (its main thread by default) is blocked in; None
    when it cannot be read; PermissionError when ptrace rights are missing;
    FileNotFoundError / ProcessLookupError when it is gone."""
    path = f"/proc/{pid}/syscall" if tid is None else f"/proc/{pid}/task/{tid}/syscall"
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        text = os.read(fd, 512)
    finally:
        os.close(fd)
    return parse(text.decode("ascii", "replace"))


def signed(value):
    """An argument as the int the program passed (a timeout of -1 reads 0xffffffff or
    0xffffffffffffffff)."""
    if value >= 1 << 63:
        return value - (1 << 64)
    if value >= 1 << 31 and value < 1 << 32:
        return value - (1 << 32)
    return value
