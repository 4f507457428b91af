"""A job's raw terminal output, kept in its directory and bounded.

`output.log` grows to half the limit, then becomes `output.log.1` (replacing the one
before) and a new `output.log` starts: the newest bytes, at least half the limit of
them, are always on disk, every one of them, however fast the program prints. This is
a stream, not a state file, so it is appended here directly rather than through store.

Output reaches it one of two ways (roost.term.intake): written after a read, or moved
in the kernel from the job's carry pipe (`take_from_pipe`), which cannot leave bytes
half way in a daemon killed between two calls. Splice refuses a file opened to append,
so the part is written at its size, which only this daemon changes.
"""

import os
import time

from roost import blocking
from roost.unix.files import open_own, open_own_for_reading

LOG_NAME = "output.log"
OLD_LOG_NAME = "output.log.1"
DISCARDED = ".discarded-"


class OutputLog:
    __slots__ = ("job_dir", "part_limit", "_fd", "_size")

    def __init__(self, job_dir, limit):
        os.makedirs(job_dir, mode=0o700, exist_ok=True)
        self.job_dir = job_dir
        self.part_limit = max(limit // 2, 4096)
        self._fd = None
        self._size = 0
        for name in os.listdir(job_dir):
            if name.startswith(OLD_LOG_NAME + DISCARDED):
                _remove(os.path.join(job_dir, name))   # left by a daemon that died
        self._open(truncate=False)

    @property
    def path(self):
        return os.path.join(self.job_dir, LOG_NAME)

    @property
    def old_path(self):
        return os.path.join(self.job_dir, OLD_LOG_NAME)

    def _open(self, truncate):
        flags = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC
        if truncate:
            flags |= os.O_TRUNC
        # the job writes its directory: a link planted at output.log is never followed
        self._fd = open_own(self.path, flags, 0o600)
        self._size = os.fstat(self._fd).st_size

    def write(self, data):
        if self._fd is None:
            return
        view = memoryview(data)
        while view:
            room = self._room()     # first: it may rotate to a new part
            written = os.pwrite(self._fd, view[:room], self._size)
            self._size += written
            view = view[written:]

    def take_from_pipe(self, pipe_fd, count):
        """Moves `count` bytes waiting in `pipe_fd` to the log; returns them (read back
        from the page cache, for the screen)."""
        pieces = []
        while count > 0 and self._fd is not None:
            room = self._room()     # first: it may rotate to a new part
            moved = os.splice(pipe_fd, self._fd, min(room, count), offset_dst=self._size)
            if moved <= 0:
                break
            pieces.append(os.pread(self._fd, moved, self._size))
            self._size += moved
            count -= moved
        return b"".join(pieces)

    def _room(self):
        """What the current part takes before it is full; a full one is rotated first."""
        if self._size >= self.part_limit:
            self._rotate()
        return self.part_limit - self._size

    def _rotate(self):
        os.close(self._fd)
        self._fd = None
        # Freeing the old part's pages takes milliseconds: rename it aside (instant)
        # and let a thread remove it, so the loop is not held.
        discarded = None
        if os.path.exists(self.old_path):
            discarded = f"{self.old_path}{DISCARDED}{time.monotonic_ns()}"
            os.rename(self.old_path, discarded)
        os.rename(self.path, self.old_path)
        self._open(truncate=True)
        if discarded is not None:
            blocking.start(_remove, discarded)

    def tail(self, size):
        """The last `size` bytes written (from both parts)."""
        return read_tail(self.job_dir, size)

    def replay_tail(self, size):
        """About the last `size` bytes, from a line's start: a screen fed them gets no half
        a sequence."""
        tail = self.tail(size)
        start = tail.find(b"\n")
        if 0 <= start < 4096 and len(tail) >= size:
            tail = tail[start + 1:]
        return tail

    def close(self):
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _remove(path):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def read_tail(job_dir, size):
    """The last `size` bytes of a job's log without opening it for writing."""
    chunks = []
    wanted = size
    for name in (LOG_NAME, OLD_LOG_NAME):
        if wanted <= 0:
            break
        fd = open_own_for_reading(os.path.join(job_dir, name))      # a planted link is not read
        if fd is None:
            continue
        try:
            length = os.fstat(fd).st_size
            chunk = os.pread(fd, min(wanted, length), max(0, length - wanted))
        finally:
            os.close(fd)
        chunks.insert(0, chunk)
        wanted -= len(chunk)
    return b"".join(chunks)
