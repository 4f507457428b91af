"""Taking a job's output off its pty into its log, so that a daemon killed at any
instant loses none of it.

A read takes bytes out of the pty: a daemon killed between that read and the write to
the log would lose them (it happened, rarely, under kill -9 with twenty busy jobs). So
where the keeper gave the job a carry pipe (it holds a copy of both ends), the output
goes pty -> pipe -> log by splice, in the kernel: whatever a killed daemon had taken
off the pty waits in the pipe, and the next daemon moves it to the log first
(`held`). The screen gets the bytes read back from the log's page cache.

A kernel that cannot splice from a pty refuses with EINVAL (said once in the log):
then, and for a job the keeper gave no pipe (a keeper of an earlier version), output is
read and written as before.
"""

import errno
import logging
import os

from roost.unix.fds import bytes_ready, close_all

log = logging.getLogger(__name__)

READ_SIZE = 65536
splice_from_pty = hasattr(os, "splice")    # until the kernel refuses


class Intake:
    """`take()`: output now in the log (bytes), None when there is none now, b"" at EOF
    (EIO: the program's side of the pty is closed)."""

    __slots__ = ("master", "log", "carry")

    def __init__(self, master, output_log, carry=None):
        self.master = master
        self.log = output_log
        self.carry = carry            # (read end, write end), or None

    def held(self):
        """What a daemon before this one took off the pty and did not log: into the log
        now, before anything newer. (Held bytes are moved even where splicing from the
        pty is refused: pipe to file always splices.)"""
        if self.carry is None:
            return b""
        waiting = bytes_ready(self.carry[0])
        return self.log.take_from_pipe(self.carry[0], waiting) if waiting else b""

    def take(self):
        global splice_from_pty
        if self.carry is not None and splice_from_pty:
            try:
                moved = os.splice(self.master, self.carry[1], READ_SIZE, flags=os.SPLICE_F_NONBLOCK)
            except BlockingIOError:
                return None
            except OSError as error:
                if error.errno == errno.EIO:
                    return b""
                if error.errno != errno.EINVAL:
                    raise
                log.info("this kernel cannot splice from a pty: its output is read and written")
                splice_from_pty = False
            else:
                if moved:
                    return self.log.take_from_pipe(self.carry[0], moved)
                # Nothing moved: a read says whether that was the end.
        try:
            data = os.read(self.master, READ_SIZE)
        except BlockingIOError:
            return None
        except OSError as error:
            if error.errno != errno.EIO:
                raise
            return b""
        self.log.write(data)
        return data

    def close(self):
        """Closes our copies of the master and of the carry pipe."""
        carry, self.carry = self.carry, None
        close_all((self.master, *(carry or ())))
