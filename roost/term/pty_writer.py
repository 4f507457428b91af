"""Writing to a pty master without ever holding the daemon's loop.

The master is non-blocking; bytes wait in an outbox and one greenlet writes them when
the fd has room. A program that stops reading its input fills the pty's buffer: then
only that job's writer waits, every other greenlet goes on (STYLE traps: pexpect's
blocking send froze every job).
"""

import logging
import os

import gevent
import gevent.socket

log = logging.getLogger(__name__)

CHUNK = 65536


class PtyWriter:
    # One per job; its watcher is made only once a program does not take its input.
    __slots__ = ("fd", "job_id", "written", "closed", "_on_progress", "_outbox", "_greenlet",
                 "_writable")

    def __init__(self, fd, job_id, on_progress):
        self.fd = fd
        self.job_id = job_id
        self.written = 0          # bytes the program's side has taken, all told
        self.closed = False
        self._on_progress = on_progress
        self._outbox = bytearray()
        self._greenlet = None
        self._writable = None

    @property
    def backlog(self):
        return len(self._outbox)

    @property
    def queued_end(self):
        """The stream position just past the last byte queued."""
        return self.written + len(self._outbox)

    def enqueue(self, data):
        if self.closed or not data:
            return
        self._outbox += data
        if self._greenlet is None:
            self._greenlet = gevent.spawn(self._write_loop)

    def withdraw(self, start, end):
        """Takes back what is still unsent of the stream positions [start, end)."""
        first = max(self.written, start) - self.written
        last = end - self.written
        if last > 0:
            del self._outbox[first:last]

    def close(self):
        self.closed = True
        if self._greenlet is not None and self._greenlet is not gevent.getcurrent():
            self._greenlet.kill(block=True)
        if self._writable is not None:
            self._writable.close()

    def _write_loop(self):
        try:
            while self._outbox and not self.closed:
                try:
                    written = os.write(self.fd, self._outbox[:CHUNK])
                except BlockingIOError:
                    if self._writable is None:
                        self._writable = gevent.get_hub().loop.io(self.fd, 2)
                    gevent.socket.wait(self._writable)
                    continue
                except InterruptedError:
                    continue
                except OSError as error:
                    log.info("job %s: write failed (%s); input dropped", self.job_id, error)
                    self._outbox.clear()
                    break
                del self._outbox[:written]
                self.written += written
                self._on_progress()
        finally:
            self._greenlet = None
            self._on_progress()
