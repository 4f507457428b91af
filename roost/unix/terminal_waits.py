"""Whether a job's program waits for its terminal, in the kernel's words (issue 27).
Standard library only: the keeper runs it (roost.keeper.keeper's `probe`), and so does a
daemon whose keeper is older.

For the job's processes (its root and the root's descendants: roost.unix.process_tree)
each thread's blocked call (roost.unix.syscalls) says what it waits on:

- `read` (or readv, pread) on an fd that is the job's own pty: it waits for its
  terminal. So does poll/select/epoll on the pty alone with no timeout.
- poll/select/epoll on the pty among other files, or on it alone with a timeout: it
  waits for the terminal or for something else, and the kernel cannot say which. So
  does a wait whose files cannot be read (io_uring, a set we have no rights to) in a
  process that holds the pty open.
- anything else (running, a sleep, a child, a pipe, a socket, a lock): not the terminal.

The verdict: `reads` when some process reads the terminal; else `unknown` when one
waits on it among other things (or holds it open and cannot be read: no ptrace rights);
else `busy`. The terminal's foreground group (TIOCGPGRP on the master) marks processes
`fg`; it is a hint, not a filter: a pipeline's reader, or a jailed program in a session
of its own, reads the pty from outside it.

Which files a call waits on, and whether one is the pty: roost.unix.wait_sets. The
evidence is plain data (it travels on the keeper's wire); `describe` puts it in words.
"""

import fcntl
import os
import struct
import termios

from roost.unix import syscalls, wait_sets
from roost.unix.process_tree import ProcessTree, read_stat, tty_device

READS, BUSY, UNKNOWN = "reads", "busy", "unknown"
# What one process does, most telling first (a process's threads: its most telling one).
READS_TERMINAL = "reads-terminal"
POLLS_TERMINAL = "polls-terminal"
UNREADABLE = "unreadable"
RUNS = "runs"
STOPPED = "stopped"
SLEEPS = "sleeps"
WAITS_CHILD = "waits-child"
READS_OTHER = "reads"
POLLS_OTHER = "polls"
WAITS = "waits"
_RANK = {READS_TERMINAL: 0, POLLS_TERMINAL: 1, UNREADABLE: 2, RUNS: 3, STOPPED: 4, READS_OTHER: 5,
         POLLS_OTHER: 6, WAITS: 7, SLEEPS: 8, WAITS_CHILD: 9}
MAX_LISTED = 8            # processes an evidence lists (the most telling)


def foreground_group(master):
    try:
        return struct.unpack("i", fcntl.ioctl(master, termios.TIOCGPGRP, b"\0\0\0\0"))[0]
    except OSError:
        return None


class Look:
    """One look at one process."""

    __slots__ = ("pid", "name", "group", "does", "call", "fd", "file", "others", "timeout")

    def __init__(self, pid, name, group, does, call=None, fd=None, file=None, others=None, timeout=None):
        self.pid, self.name, self.group, self.does = pid, name, group, does
        self.call, self.fd, self.file, self.others, self.timeout = call, fd, file, others, timeout

    def as_dict(self, foreground):
        found = {"pid": self.pid, "name": self.name, "does": self.does, "fg": self.group == foreground}
        for key in ("call", "fd", "file", "others", "timeout"):
            value = getattr(self, key)
            if value is not None:
                found[key] = value
        return found


class Prober:
    """Looks at jobs' processes; one per process that looks (it keeps the process tree,
    and each pty's identity while its job runs)."""

    def __init__(self, tree=None):
        self.tree = tree or ProcessTree()
        self._ptys = {}           # (root pid, master fd) -> PtyIdentity

    def probe_master(self, root, master):
        """probe() for the job whose program is `root` on the pty of `master`; None
        when the pty cannot be told."""
        key = (root, master)
        pty = self._ptys.get(key)
        if pty is None:
            pty = wait_sets.pty_identity(master)
            if pty is None:
                return None
            if len(self._ptys) >= 4096:
                self._ptys.clear()
            # A master fd number is reused by a later job's: its root's pid then differs.
            for stale in [other for other in self._ptys if other[1] == master]:
                del self._ptys[stale]
            self._ptys[key] = pty
        return self.probe(root, pty, master)

    def probe(self, root, pty, master=None):
        """The evidence for the job whose program is `root` on `pty` (a PtyIdentity):
        {verdict, terminal, foreground, processes (how many), seen: [what each does, the
        most telling first, at most MAX_LISTED]}."""
        foreground = foreground_group(master) if master is not None else None
        looks = []
        for pid in self.tree.descendants(root):
            look = self.look(pid, pty)
            if look is not None:
                looks.append(look)
        looks.sort(key=lambda look: (_RANK.get(look.does, 9), look.group != foreground, look.pid))
        return {"verdict": verdict(looks), "terminal": pty.name, "foreground": foreground,
                "processes": len(looks), "seen": [look.as_dict(foreground) for look in looks[:MAX_LISTED]]}

    def look(self, pid, pty):
        """What process `pid` does, or None when it is gone (or a zombie)."""
        st = read_stat(pid)
        if st is None or st.state in "ZX":
            return None
        if st.state in "Tt":
            return Look(pid, st.name, st.group, STOPPED)
        ctty = tty_device(st.tty)
        tids = [None]
        if st.threads > 1:
            try:
                tids = sorted(int(tid) for tid in os.listdir(f"/proc/{pid}/task"))
            except OSError:
                return None
        best = None
        for tid in tids:
            look = self._thread(pid, tid, st, ctty, pty)
            if look is None:
                continue
            if best is None or _RANK[look.does] < _RANK[best.does]:
                best = look
            if best.does == READS_TERMINAL:
                break
        return best

    def _thread(self, pid, tid, st, ctty, pty):
        try:
            call = syscalls.read_call(pid, tid)
        except PermissionError:
            return self._unreadable(pid, st, ctty, pty)
        except OSError:
            return None
        if call is None:
            return self._unreadable(pid, st, ctty, pty)
        if call in (syscalls.RUNNING, syscalls.OUTSIDE):
            return Look(pid, st.name, st.group, RUNS)
        kind = call.kind
        if kind == syscalls.READS:
            fd = syscalls.signed(call.args[0])
            target = wait_sets.target(pid, fd, ctty, pty)
            if target == "terminal":
                return Look(pid, st.name, st.group, READS_TERMINAL, call.name, fd, pty.name)
            return Look(pid, st.name, st.group, READS_OTHER, call.name, fd, target)
        if kind in (syscalls.POLLS, syscalls.SELECTS, syscalls.EPOLLS):
            return self._polling(pid, st, ctty, pty, call)
        if kind == syscalls.OPAQUE:
            # What it waits on cannot be read: the terminal maybe, if it holds it.
            if wait_sets.holds(pid, ctty, pty) is False:
                return Look(pid, st.name, st.group, WAITS, call.name)
            return Look(pid, st.name, st.group, POLLS_TERMINAL, call.name, others=-1)
        if kind == syscalls.SLEEPS:
            return Look(pid, st.name, st.group, SLEEPS, call.name)
        if kind == syscalls.WAITS_CHILD:
            return Look(pid, st.name, st.group, WAITS_CHILD, call.name)
        return Look(pid, st.name, st.group, WAITS, call.name)

    def _unreadable(self, pid, st, ctty, pty):
        """No rights to read its call: it might read the terminal only if it holds it."""
        holds = wait_sets.holds(pid, ctty, pty)
        if holds is False:
            return Look(pid, st.name, st.group, WAITS, None, file="its call is not ours to read")
        return Look(pid, st.name, st.group, UNREADABLE)

    def _polling(self, pid, st, ctty, pty, call):
        try:
            if call.kind == syscalls.EPOLLS:
                files = wait_sets.epoll_files(pid, syscalls.signed(call.args[0]), ctty, pty)
                timeout = syscalls.signed(call.args[3]) >= 0 if call.name != "epoll_pwait2" else call.args[3] != 0
            elif call.kind == syscalls.POLLS:
                files = wait_sets.poll_files(pid, call.args[0], call.args[1], ctty, pty)
                timeout = syscalls.signed(call.args[2]) >= 0 if call.name == "poll" else call.args[2] != 0
            else:
                files = wait_sets.select_files(pid, call.args[0], call.args[1], ctty, pty)
                timeout = call.args[4] != 0
        except OSError:
            files = None
        if files is None:
            # The set cannot be read: it may hold the terminal only if the process does.
            if wait_sets.holds(pid, ctty, pty) is False:
                return Look(pid, st.name, st.group, POLLS_OTHER, call.name)
            return Look(pid, st.name, st.group, POLLS_TERMINAL, call.name, others=-1)
        others = sum(1 for file in files if file != "terminal")
        if len(files) == others:
            return Look(pid, st.name, st.group, POLLS_OTHER, call.name, others=others)
        if others == 0 and not timeout:
            return Look(pid, st.name, st.group, READS_TERMINAL, call.name, file=pty.name, others=0)
        return Look(pid, st.name, st.group, POLLS_TERMINAL, call.name, file=pty.name, others=others,
                    timeout=timeout)


def verdict(looks):
    does = {look.does for look in looks}
    if READS_TERMINAL in does:
        return READS
    if POLLS_TERMINAL in does or UNREADABLE in does:
        return UNKNOWN
    return BUSY


# -- in words -------------------------------------------------------------------------

_VERDICT_WORDS = {READS: "it waits for its terminal", BUSY: "none of its processes waits for its terminal",
                  UNKNOWN: "whether it waits for its terminal cannot be told"}


def describe(evidence, most=4):
    """The evidence in a sentence: what the most telling processes do, then what that
    means ("pid 4242 `sh` reads its terminal (read on fd 0, /dev/pts/3): it waits for
    its terminal")."""
    if not isinstance(evidence, dict):
        return "the kernel was not asked"
    if evidence.get("reason"):
        return str(evidence["reason"])
    seen = evidence.get("seen") or []
    terminal = evidence.get("terminal") or "its terminal"
    said = "; ".join(describe_one(entry, terminal) for entry in seen[:most]) or "no process of it is left"
    hidden = (evidence.get("processes") or len(seen)) - min(most, len(seen))
    if hidden > 0:
        said += f" (and {hidden} more)"
    return f"{said}: {_VERDICT_WORDS.get(evidence.get('verdict'), 'unknown')}"


def describe_one(entry, terminal):
    who = f"pid {entry.get('pid')} `{entry.get('name')}`"
    does, call = entry.get("does"), entry.get("call")
    if does == READS_TERMINAL:
        how = f"{call} on fd {entry['fd']}, {terminal}" if "fd" in entry else f"{call} on {terminal} alone"
        return f"{who} reads its terminal ({how})"
    if does == POLLS_TERMINAL:
        others = entry.get("others")
        if others == -1:
            return f"{who} waits in {call} on files roost cannot read, its terminal maybe among them"
        on = "its terminal" + (f" and {others} other file{'' if others == 1 else 's'}" if others else " alone")
        return f"{who} waits in {call} on {on}" + (" with a timeout" if entry.get("timeout") else "")
    if does == UNREADABLE:
        return f"{who} holds its terminal, and what it waits on is not roost's to read"
    if does == READS_OTHER:
        return f"{who} reads {entry.get('file')} ({call} on fd {entry.get('fd')})"
    if does == POLLS_OTHER:
        return f"{who} waits in {call} on {entry.get('others', 'other')} other files, not its terminal"
    words = {RUNS: "runs", STOPPED: "is stopped", SLEEPS: f"sleeps ({call})",
             WAITS_CHILD: f"waits for a child ({call})"}
    if does in words:
        return f"{who} {words[does]}"
    return f"{who} waits in {call or entry.get('file') or 'the kernel'}"
