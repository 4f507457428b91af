"""A file read from where it was last read: each call of `lines()` gives the whole lines
written since, never a line twice and never one torn by a writer that is not done. The
offset is the follower's state (kept across daemon restarts by its owner), so a file is
never read again from its start. Memory stays bounded whatever the file's size: it is
read in chunks, and a line longer than MAX_LINE (no record line of the agents comes near)
is skipped whole rather than held.

A file whose inode changed, or that is now shorter than the offset, was replaced: it is
read again from its start (what it repeats is counted once by the ledger's keys).
"""

import os

CHUNK = 1 << 20
MAX_LINE = 64 << 20


class LineFollower:
    __slots__ = ("path", "offset", "inode", "_partial", "_skipping")

    def __init__(self, path, offset=0, inode=None):
        self.path = path
        self.offset = offset
        self.inode = inode
        self._partial = b""
        self._skipping = False      # inside a line longer than MAX_LINE: dropped to its end

    def state(self):
        """What a later follower needs to go on from here (only whole lines are read)."""
        return {"offset": self.offset - len(self._partial), "inode": self.inode}

    def read(self, take, keep=None, limit=None):
        """Hands each whole line written since the last call to `take(line)` (bytes,
        without its newline), as it is read: nothing of the file is held but the line at
        hand. `keep(line)`: a cheap test that spares `take` the lines it says no to.
        Returns how many bytes were read: past `limit` it stops at a chunk's end (call
        again for the rest). Blocking: a big first read belongs in the threadpool."""
        try:
            handle = open(self.path, "rb")
        except OSError:
            return 0
        with handle:
            info = os.fstat(handle.fileno())
            if self.inode is not None and (info.st_ino != self.inode or info.st_size < self.offset):
                self.offset, self._partial, self._skipping = 0, b"", False
            self.inode = info.st_ino
            before = self.offset
            if info.st_size == self.offset:
                return 0
            handle.seek(self.offset)
            while True:
                chunk = handle.read(CHUNK)
                if not chunk:
                    break
                self.offset += len(chunk)
                start = 0
                while True:
                    end = chunk.find(b"\n", start)
                    if end < 0:
                        self._hold(chunk[start:])
                        break
                    line = chunk[start:end]
                    start = end + 1
                    if self._skipping:
                        self._skipping = False
                        continue
                    if self._partial:
                        line, self._partial = self._partial + line, b""
                    if line and (keep is None or keep(line)):
                        take(line)
                if limit is not None and self.offset - before >= limit:
                    break
        return self.offset - before

    def _hold(self, rest):
        if self._skipping or not rest:
            return
        if len(self._partial) + len(rest) > MAX_LINE:
            self._partial, self._skipping = b"", True
        else:
            self._partial += rest
