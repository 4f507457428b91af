"""A keeper that died without roost asking (issue 26 item 2): a security event for the
jobs that run without a jail.

The keeper is the parent and child subreaper of every job, so while it lives whatever
a job starts descends from it, however it forks or detaches (roost.jobs.origins). A job
that kills it (`kill -9 $PPID`) leaves its processes to init, where the ancestry walk
would find them outside every job. So a process left to init (its parent is pid 1) that
was alive when a keeper died, and started after that keeper did, is not the person:
its start time and its parent tell (roost.unix.ancestry). A jailed job cannot see the
keeper, let alone kill it, and what it leaves dies with it (roost.unix.bwrap). "Init"
is pid 1 or, where a child subreaper took the keeper's orphans (systemd's user manager),
one of the daemon's own ancestors.

What this cannot tell: a process left behind that starts another and exits before the
other connects leaves a process born after the death, which passes. An unjailed job is
not a boundary (docs/security.md); this catches the plain `kill -9 $PPID`.

Each loss is told once, in the feed (`kind: "keeper"`, `lost: true`) and so to the
notifier, and kept in `$ROOST_HOME/keeper-losses.json` (the losses of this boot: start
times count from it) for `roost doctor`.
"""

import logging
import os
import time

from roost import store
from roost.unix.ancestry import read_stat

log = logging.getLogger(__name__)

FILE = "keeper-losses.json"
KEPT = 10
_TICKS = os.sysconf("SC_CLK_TCK")


def boot_ticks():
    """Now, in the clock ticks since boot that /proc/<pid>/stat's start times count."""
    return int(time.clock_gettime(time.CLOCK_BOOTTIME) * _TICKS)


def boot_id():
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as handle:
            return handle.read().strip()
    except OSError:
        return None


class KeeperLosses:
    def __init__(self, home, bus, keeper_pid, clock):
        self.path = os.path.join(home, FILE)
        self.bus = bus
        self.clock = clock               # roost.clock: when a loss is recorded
        self.keeper_pid = keeper_pid     # fn() -> the keeper's pid, or None
        self.losses = []                 # {pid, start, died, at}: this boot's, oldest first
        self._seen = None                # (pid, start) of the keeper last seen
        self._boot = boot_id()
        self.reapers = _ancestors(os.getpid()) | {1}    # where a dead keeper's orphans go

    def load(self):
        kept = store.read_json(self.path) or {}
        if kept.get("boot") == self._boot and isinstance(kept.get("losses"), list):
            self.losses = [loss for loss in kept["losses"] if isinstance(loss, dict)]

    def seen(self):
        """Note the keeper that serves now (its start time, read while it lives)."""
        pid = self.keeper_pid()
        if pid is None or (self._seen is not None and self._seen[0] == pid):
            return
        stat = read_stat(pid)
        if stat is not None:
            self._seen = (pid, stat.start)

    def lost(self):
        """The connection to the keeper ended unasked: it died (or was killed)."""
        pid = self.keeper_pid()
        start = self._seen[1] if self._seen is not None and self._seen[0] == pid else 0
        loss = {"pid": pid, "start": start, "died": boot_ticks(), "at": self.clock.now_ms()}
        self.losses = (self.losses + [loss])[-KEPT:]
        try:
            store.write_json(self.path, {"version": 1, "boot": self._boot, "losses": self.losses})
        except OSError as error:
            log.error("cannot record the keeper's loss in %s: %s", self.path, error)
        log.warning("the keeper (pid %s) died without roost asking: a process left to init that was alive then "
                    "is not taken for the person", pid)
        self.bus.publish("keeper", f"the keeper (pid {pid}) died without roost asking: a job that runs without "
                                   "a jail may have left processes behind; they are not taken for the person "
                                   "(roost doctor)", lost=True, pid=pid)

    def left_behind(self, stat):
        """Whether a process (a ProcessStat) was left to init when a keeper died."""
        if stat.parent not in self.reapers:
            return False
        return any(loss.get("start", 0) <= stat.start <= loss.get("died", 0) for loss in self.losses)

    def left_now(self):
        """The processes alive now that a lost keeper left to init: [(pid, command)]."""
        if not self.losses:
            return []
        found, uid = [], os.getuid()
        for name in os.listdir("/proc"):
            try:
                if not name.isdigit() or os.stat(f"/proc/{name}").st_uid != uid:
                    continue
            except OSError:
                continue
            stat = read_stat(int(name))
            if stat is not None and self.left_behind(stat):
                found.append((stat.pid, _command(stat.pid)))
        return found


def _ancestors(pid):
    found = set()
    stat = read_stat(pid)
    while stat is not None and stat.parent > 1 and len(found) < 256:
        found.add(stat.parent)
        stat = read_stat(stat.parent)
    return found


def _command(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read(200).replace(b"\0", b" ").decode("utf-8", "replace").strip()
    except OSError:
        return "?"
