"""Reading one job's pty master: no greenlet while the job is quiet, no kernel waits.

A quiet job costs a watcher on its master's readability (and, while its screen waits to
be judged, a timer): when either fires, the hub calls back and only then a greenlet is
spawned. It reads, hands the output to its owner and asks the owner what next: read
again on a later turn of the loop, in its order among the readers with more to do
(MORE, roost.term.turns), wait a while for more output (WAIT), or let the
greenlet go until the fd or a deadline wakes it again (PARK). At EOF the owner gets
`drain_step()` turns to finish its screen, then `ended()`.

The master is read once a turn, and only when it holds output (woken by readability,
or FIONREAD says so): a read (or a poll) that finds a pty's buffer empty waits in the
kernel for the pty's pending flush work (n_tty_read), and under a flood on a busy
machine those waits held the whole loop for milliseconds at a time.
"""

import fcntl
import logging
import os

import gevent
import gevent.socket
from gevent import getcurrent

from roost.term.turns import turns
from roost.unix.fds import bytes_ready

log = logging.getLogger(__name__)

MORE, WAIT, PARK = "more", "wait", "park"


class _Quiet(Exception):
    pass


_QUIET = _Quiet()


class PtyReader:
    """`intake` takes the output off the pty into the log (roost.term.intake). `owner`
    has output(data), next_step(got_output) -> (MORE | WAIT | PARK, seconds
    or None), drain_step() -> more to do, and ended()."""

    __slots__ = ("fd", "intake", "job_id", "owner", "closed", "_greenlet", "_readable", "_timer")

    def __init__(self, intake, job_id, owner):
        self.fd = fd = intake.master
        self.intake = intake
        self.job_id = job_id
        self.owner = owner
        self.closed = False
        self._greenlet = None
        self._timer = None
        self._readable = gevent.get_hub().loop.io(fd, 1)
        flags = fcntl.fcntl(fd, fcntl.F_GETFL)
        fcntl.fcntl(fd, fcntl.F_SETFL, flags | os.O_NONBLOCK)

    def start(self):
        """Reads from now on."""
        self._greenlet = gevent.spawn(self._run, True)

    def close(self):
        self.closed = True
        greenlet, self._greenlet = self._greenlet, None
        if greenlet is not None and greenlet is not getcurrent():
            greenlet.kill(block=True)
        self._readable.close()
        self._close_timer()

    # -- the greenlet, while there is output ------------------------------------------

    def _run(self, ready):
        """`ready`: started, or woken by readability: read without asking first."""
        owner = self.owner
        try:
            while True:
                data = self._read(ready)
                if data == b"":
                    break
                if data:
                    owner.output(data)
                step, seconds = owner.next_step(bool(data))
                ready = False
                if step is MORE:
                    # A turn of the loop shared with every reader that has more to do
                    # (roost.term.turns): other connections' requests go on between.
                    turns.wait()
                elif step is WAIT:
                    ready = self._wait_readable(seconds)
                else:
                    self._park(seconds)
                    return
            while owner.drain_step():
                turns.wait()
        except gevent.GreenletExit:
            return
        except Exception:
            log.exception("job %s: reading its terminal failed", self.job_id)
        owner.ended()

    def _read(self, ready):
        """Output, already in the log (bytes), None when there is none now, b"" at EOF."""
        if ready or bytes_ready(self.fd):
            return self.intake.take()
        return None

    def _wait_readable(self, seconds):
        try:
            gevent.socket.wait(self._readable, seconds, _QUIET)
        except _Quiet:
            return False
        return True

    def look_soon(self):
        """The owner's next step may be due sooner than the deadline it parked with: ask it now."""
        if not self.closed and self._greenlet is None:
            self._unpark(False)

    # -- parked: watchers only ----------------------------------------------------------

    def _park(self, seconds):
        self._greenlet = None
        self._readable.start(self._unpark, True)
        if seconds is not None:
            self._timer = gevent.get_hub().loop.timer(max(0.0, seconds))
            self._timer.start(self._unpark, False)

    def _unpark(self, readable):
        """Called by the hub: the master turned readable or the owner's deadline came."""
        self._readable.stop()
        self._close_timer()
        if not self.closed and self._greenlet is None:
            self._greenlet = gevent.spawn(self._run, readable)

    def _close_timer(self):
        timer, self._timer = self._timer, None
        if timer is not None:
            timer.close()
