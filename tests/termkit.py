"""A job's Terminal driven in-process on a real pty, with gevent's loop."""

import fcntl
import os
import pty
import struct
import subprocess
import tempfile
import termios
import time

import gevent

from roost.term.terminal import Terminal
from roost.unix.terminal_waits import Prober


def gwait(predicate, timeout=10.0, what="the condition"):
    """Polls `predicate` cooperatively (the Terminal's greenlets run meanwhile)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        gevent.sleep(0.01)


class Job:
    """A child on a pty of its own, and the Terminal over its master. `carried`: its
    output goes through a carry pipe, as a keeper gives one to the daemon (else it is
    read and written, as with an older keeper)."""

    def __init__(self, argv, term=None, rows=24, cols=80, log_limit=4 * 1024 * 1024, typed=False,
                 job_dir=None, carried=True, takes_task=True):
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        self.process = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave,
                                        start_new_session=True, close_fds=True)
        os.close(slave)
        self.dir = job_dir or tempfile.mkdtemp(prefix="rt-term-")
        self.changes = []
        self.eofs = []
        # The kernel's word on the child, read here as the keeper reads it (issue 27).
        prober, pid = Prober(), self.process.pid
        self.terminal = Terminal("job-1", master, self.dir, term=term, rows=rows, cols=cols,
                                 on_change=self.changes.append, on_eof=lambda: self.eofs.append(1),
                                 log_limit=log_limit, typed=typed,
                                 carry=os.pipe2(os.O_CLOEXEC) if carried else None,
                                 probe=lambda: prober.probe_master(pid, master), takes_task=takes_task).start()

    def states(self):
        return [(change["state"], change["status"], change["waitingFor"]) for change in self.changes]

    def wait_status(self, status, timeout=10.0):
        gwait(lambda: self.terminal.reading["status"] == status, timeout,
              f"status {status} (now {self.terminal.reading})")
        return self.terminal.reading

    def log_bytes(self):
        data = b""
        for name in ("output.log.1", "output.log"):
            path = os.path.join(self.dir, name)
            if os.path.exists(path):
                with open(path, "rb") as handle:
                    data += handle.read()
        return data

    def close(self):
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(5)
        self.terminal.close()
