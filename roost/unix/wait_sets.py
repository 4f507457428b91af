"""Which files a job's process waits on, compared with the job's pty (issue 27): the
fd of a read, the sets of poll, select and epoll (read from /proc/<pid>/mem and the epoll
fd's fdinfo, which need the same ptrace rights as the blocked call itself). Standard
library only: the keeper runs it.

An fd is compared with the pty by its inode (st_dev, st_ino), never by path: a jailed
program has a /dev of its own. `/dev/tty` (5, 0) is the process's controlling terminal:
it is the pty when stat's tty_nr says so.
"""

import fcntl
import os
import stat
import struct

MAX_POLLED = 1024         # fds of a poll or select set read, at most
_DEV_TTY = os.makedev(5, 0)
_TIOCGPTPEER = 0x5441     # _IO('T', 0x41): the slave of a master, opened (Linux 4.13)
_TIOCGPTN = 0x80045430
_POLL_READ = 0x1 | 0x2 | 0x40 | 0x80          # POLLIN, POLLPRI, POLLRDNORM, POLLRDBAND
_EPOLL_READ = 0x1 | 0x2                       # EPOLLIN, EPOLLPRI


class PtyIdentity:
    """The job's pty slave as the kernel knows it: its inode (dev, ino), its device
    number and its name (for people)."""

    __slots__ = ("dev", "ino", "rdev", "name")

    def __init__(self, dev, ino, rdev, name):
        self.dev, self.ino, self.rdev, self.name = dev, ino, rdev, name

    def is_it(self, st, ctty=None):
        """Whether the file `st` (an os.stat_result) is this pty; `ctty`: the (major,
        minor) of the process's controlling terminal, for /dev/tty."""
        if not stat.S_ISCHR(st.st_mode):
            return False
        if (st.st_dev, st.st_ino) == (self.dev, self.ino):
            return True
        return st.st_rdev == _DEV_TTY and ctty == (os.major(self.rdev), os.minor(self.rdev))


def pty_identity(master):
    """The PtyIdentity of the slave of pty `master`, or None when it cannot be had."""
    try:
        number = struct.unpack("I", fcntl.ioctl(master, _TIOCGPTN, b"\0\0\0\0"))[0]
    except OSError:
        return None
    name = f"/dev/pts/{number}"
    try:
        # O_NOCTTY: the keeper is a session leader with no terminal; this must not become its.
        peer = fcntl.ioctl(master, _TIOCGPTPEER, os.O_RDWR | os.O_NOCTTY | os.O_CLOEXEC)
        try:
            st = os.fstat(peer)
        finally:
            os.close(peer)
    except OSError:
        try:
            st = os.stat(name)
        except OSError:
            return None
    return PtyIdentity(st.st_dev, st.st_ino, st.st_rdev, name)


def target(pid, fd, ctty, pty):
    """`terminal`, or the kind of file fd `fd` of `pid` is (pipe, socket, file, ...)."""
    try:
        st = os.stat(f"/proc/{pid}/fd/{fd}")
    except OSError:
        return "a closed fd"
    if pty.is_it(st, ctty):
        return "terminal"
    return _kind(st, pid, fd)


def _kind(st, pid, fd):
    mode = st.st_mode
    if stat.S_ISFIFO(mode):
        return "a pipe"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISREG(mode):
        return "a file"
    if stat.S_ISCHR(mode):
        return "another terminal" if os.major(st.st_rdev) in (4, 5, 136, 137, 138, 139, 140, 141, 142, 143) \
            else "a device"
    try:
        link = os.readlink(f"/proc/{pid}/fd/{fd}")
    except OSError:
        return "a file"
    return link.removeprefix("anon_inode:").strip("[]") if link.startswith("anon_inode:") else "a file"


def holds(pid, ctty, pty):
    """Whether `pid` has the terminal open (None: its fds cannot be listed)."""
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return None
    for fd in fds:
        try:
            if pty.is_it(os.stat(f"/proc/{pid}/fd/{fd}"), ctty):
                return True
        except OSError:
            continue
    return False


def _read_memory(pid, address, size):
    fd = os.open(f"/proc/{pid}/mem", os.O_RDONLY | os.O_CLOEXEC)
    try:
        return os.pread(fd, size, address)
    finally:
        os.close(fd)


def poll_files(pid, address, count, ctty, pty):
    """What each fd of a poll set waits to read is: `terminal` or its kind."""
    if not address or count > MAX_POLLED:
        return None if count else []
    data = _read_memory(pid, address, count * 8)
    files = []
    for index in range(len(data) // 8):
        fd, events, _ = struct.unpack_from("ihh", data, index * 8)
        if fd >= 0 and events & _POLL_READ:
            files.append(target(pid, fd, ctty, pty))
    return files


def select_files(pid, count, address, ctty, pty):
    if not address:
        return []
    if count > MAX_POLLED:
        return None
    data = _read_memory(pid, address, (count + 63) // 64 * 8)
    files = []
    for fd in range(count):
        if data[fd // 8] >> (fd % 8) & 1:
            files.append(target(pid, fd, ctty, pty))
    return files


def epoll_files(pid, epoll_fd, ctty, pty, depth=0):
    """What an epoll set waits to read, from its fdinfo (`tfd: N events: X ... ino: sdev:`):
    each entry's inode is compared with the pty's; an epoll inside it is looked into."""
    fd = os.open(f"/proc/{pid}/fdinfo/{epoll_fd}", os.O_RDONLY | os.O_CLOEXEC)
    try:
        text = os.read(fd, 65536).decode("ascii", "replace")
    finally:
        os.close(fd)
    files = []
    for line in text.splitlines():
        if not line.startswith("tfd:"):
            continue
        fields = dict(_pairs(line))
        try:
            target_fd, events = int(fields["tfd"]), int(fields["events"], 16)
            ino, sdev = int(fields["ino"], 16), int(fields["sdev"], 16)
        except (KeyError, ValueError):
            files.append("a file")
            continue
        if not events & _EPOLL_READ:
            continue
        dev = os.makedev(sdev >> 20, sdev & 0xfffff)
        if (dev, ino) == (pty.dev, pty.ino):
            files.append("terminal")
            continue
        kind = target(pid, target_fd, ctty, pty)
        if kind == "eventpoll" and depth < 2:
            files.extend(epoll_files(pid, target_fd, ctty, pty, depth + 1))
        else:
            files.append(kind)
    return files


def _pairs(line):
    """`tfd:        4 events:       19 data: 4  pos:0 ino:3 sdev:1a` as (name, value)."""
    tokens = line.replace(":", ": ").split()
    for index in range(len(tokens) - 1):
        if tokens[index].endswith(":"):
            yield tokens[index][:-1], tokens[index + 1]
