"""A process's descendants, read from /proc (Linux). Standard library only: the keeper
imports it.

Where the kernel lists each thread's children (/proc/<pid>/task/<tid>/children,
CONFIG_PROC_CHILDREN) the tree is walked from the root down. Where it does not, one
table of every process's parent serves all the jobs: /proc is listed again only when
a process was made since (the last pid the kernel gave, /proc/loadavg's last field,
moved), and only the new pids' stat files are read, so looking at a quiet machine's
jobs again costs one small read.
"""

import os

MAX_DESCENDANTS = 256      # a job's processes looked at, at most (a fork bomb is not read whole)


def _read(path, size=4096):
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        return os.read(fd, size)
    finally:
        os.close(fd)


class Stat:
    """The fields of /proc/<pid>/stat a look at a process needs."""

    __slots__ = ("pid", "name", "state", "parent", "group", "session", "tty", "threads", "start")

    def __init__(self, pid, name, fields):
        # fields[0] is stat's field 3 (state): field N is fields[N - 3].
        self.pid = pid
        self.name = name
        self.state = fields[0]
        self.parent = int(fields[1])
        self.group = int(fields[2])
        self.session = int(fields[3])
        self.tty = int(fields[4])            # the controlling terminal's device (kernel encoding)
        self.threads = int(fields[17])
        self.start = int(fields[19])


def read_stat(pid):
    """The Stat of `pid`, or None when it is gone or cannot be read."""
    try:
        data = _read(f"/proc/{pid}/stat", 1024)
    except OSError:
        return None
    # The command's name is in parentheses and may hold spaces or parentheses itself.
    open_, close = data.find(b"("), data.rfind(b")")
    if open_ < 0 or close < 0:
        return None
    fields = data[close + 2:].decode("ascii", "replace").split()
    try:
        return Stat(pid, data[open_ + 1:close].decode("utf-8", "replace"), fields)
    except (IndexError, ValueError):
        return None


def tty_device(encoded):
    """(major, minor) of stat's tty_nr (the kernel's old/new dev_t encoding)."""
    return (encoded >> 8) & 0xfff, (encoded & 0xff) | ((encoded >> 12) & 0xfff00)


def _has_children_files():
    try:
        tid = os.listdir("/proc/self/task")[0]
        return os.path.exists(f"/proc/self/task/{tid}/children")
    except (OSError, IndexError):
        return False


class ProcessTree:
    """Finds a root's descendants. One instance serves every job of a process."""

    def __init__(self, children_files=None):
        self.children_files = _has_children_files() if children_files is None else children_files
        self._parents = {}        # pid -> parent pid (the table, without children files)
        self._last_pid = None
        self.listings = 0         # how often /proc was listed (bench/states)

    def descendants(self, root):
        """`root` and its descendants' pids, root first, at most MAX_DESCENDANTS."""
        if self.children_files:
            return self._walk(root, self._children_of)
        self._refresh()
        children = {}
        for pid, parent in self._parents.items():
            children.setdefault(parent, []).append(pid)
        return self._walk(root, lambda pid: children.get(pid, ()))

    @staticmethod
    def _walk(root, children_of):
        found, queue, seen = [], [root], {root}
        while queue and len(found) < MAX_DESCENDANTS:
            pid = queue.pop(0)
            found.append(pid)
            for child in children_of(pid):
                if child not in seen:
                    seen.add(child)
                    queue.append(child)
        return found

    @staticmethod
    def _children_of(pid):
        children = []
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            return children
        for tid in tids:
            try:
                children.extend(int(child) for child in _read(f"/proc/{pid}/task/{tid}/children", 65536).split())
            except OSError:
                continue
        return children

    def _refresh(self):
        last = _last_pid()
        if last is not None and last == self._last_pid:
            return            # no process was made since: the table holds
        self.listings += 1
        before, self._last_pid = self._last_pid, last
        listed = set()
        for name in os.listdir("/proc"):
            if name.isdigit():
                listed.add(int(name))
        parents = {pid: parent for pid, parent in self._parents.items() if pid in listed}
        # A pid the kernel gave since the last look is read again even when the table
        # has it: the process it named may have ended and the pid been reused.
        fresh = (lambda pid: before < pid <= last) if before is not None and last is not None and last >= before \
            else (lambda pid: True)
        for pid in listed:
            if pid not in parents or fresh(pid):
                stat = read_stat(pid)
                if stat is not None:
                    parents[pid] = stat.parent
                else:
                    parents.pop(pid, None)
        self._parents = parents


def _last_pid():
    """The last pid the kernel gave in this pid namespace, or None."""
    try:
        return int(_read("/proc/loadavg", 128).split()[-1])
    except (OSError, ValueError, IndexError):
        return None
