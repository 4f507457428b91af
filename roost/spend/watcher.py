"""Which followed directories changed, told by the kernel (inotify, through
inotify_simple): following fifty live sessions costs nothing while they write nothing,
and a new line is seen as it is written, with no polling. One inotify descriptor for
the daemon, one watch per directory, one greenlet that waits on it.

`watch(directory, owner)` adds an owner (a job id) to a directory's watch;
`on_change(changes)` is called with {directory: {name: created}} of what changed (a
file written, or `created`: one that appeared), at most once per COALESCE_S (an agent
writing a response streams many writes). Many jobs may share a directory (one working
folder, one CODEX_HOME): the names say whose file it was. A directory that does not
exist yet is not watched; its owner asks again when it looks again.
"""

import logging

import gevent
from gevent.socket import wait_read

log = logging.getLogger(__name__)

COALESCE_S = 0.05


class DirectoryWatcher:
    def __init__(self, on_change):
        self.on_change = on_change
        self._inotify = None
        self._by_wd = {}           # watch descriptor -> directory
        self._wd = {}              # directory -> watch descriptor
        self._owners = {}          # directory -> owners
        self._greenlet = None
        self._new = self._gone = 0
        self.broken = None         # why the kernel's events cannot be had (then owners look at turns only)

    def start(self):
        try:
            from inotify_simple import INotify

            self._inotify = INotify(nonblocking=True)
        except (ImportError, OSError) as error:
            self.broken = f"inotify is not available ({error}): spend is read at each turn's end only"
            log.warning("%s", self.broken)
            return
        self._greenlet = gevent.spawn(self._run)

    def stop(self):
        if self._greenlet is not None:
            self._greenlet.kill(block=False)
        if self._inotify is not None:
            self._inotify.close()
            self._inotify = None

    def watch(self, directory, owner):
        owners = self._owners.setdefault(directory, set())
        owners.add(owner)
        if self._inotify is None or directory in self._wd:
            return
        from inotify_simple import flags

        self._new = flags.CREATE | flags.MOVED_TO
        self._gone = flags.DELETE_SELF | flags.IGNORED
        mask = flags.MODIFY | flags.MOVED_TO | flags.CREATE | flags.DELETE_SELF
        try:
            wd = self._inotify.add_watch(directory, mask)
        except OSError:
            return        # not there yet (or not ours to read): looked for again later
        self._wd[directory] = wd
        self._by_wd[wd] = directory

    def forget(self, owner):
        for directory in [directory for directory, owners in self._owners.items() if owner in owners]:
            owners = self._owners[directory]
            owners.discard(owner)
            if not owners:
                del self._owners[directory]
                wd = self._wd.pop(directory, None)
                if wd is not None:
                    self._by_wd.pop(wd, None)
                    try:
                        self._inotify.rm_watch(wd)
                    except OSError:
                        pass

    def owners(self, directory):
        return self._owners.get(directory, set())

    def watching(self):
        return len(self._wd)

    def _run(self):
        fd = self._inotify.fileno()
        while True:
            try:
                wait_read(fd)
                gevent.sleep(COALESCE_S)        # the rest of a streamed write comes along
                changed = {}
                for event in self._inotify.read(timeout=0):
                    directory = self._by_wd.get(event.wd)
                    if directory is None:
                        continue
                    if event.mask & self._gone:
                        self._wd.pop(directory, None)
                        self._by_wd.pop(event.wd, None)
                        continue
                    names = changed.setdefault(directory, {})
                    names[event.name] = names.get(event.name, False) or bool(event.mask & self._new)
                if changed:
                    self.on_change(changed)
            except Exception:
                log.exception("the record watcher failed a round; it goes on")
                gevent.sleep(1)
