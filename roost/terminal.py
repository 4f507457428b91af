"""A job's terminal in the daemon: the greenlet that owns one pty master fd.

The pump reads the master (non-blocking; it sleeps on the fd's readability, with a
timer only while output waits to be judged, so an idle job costs nothing), appends every
byte to the job's bounded log, hands the live bytes to attachers, and feeds the screen
in slices with a yield between them: under a flood the screen skips ahead rather than
hold the loop (the log still keeps every byte). When the screen has been quiet for the
profile's settle time it is judged (roost.term_profile) and `on_change` hears of a new
reading. Writes to the master (typed replies, attachers' keys, query answers) go
through one writer greenlet and never block the loop: a program that stops reading
stalls only its own job.
"""

import errno
import fcntl
import logging
import os
import struct
import termios
import time

import gevent
import gevent.event
import gevent.lock
import gevent.socket
from gevent import getcurrent

from .attachers import Attachers
from .output_log import OutputLog
from .pty_writer import PtyWriter
from .screen import Screen
from .term_profile import TermProfile, last_line, working_reading
from .typing_check import left_input_line

log = logging.getLogger(__name__)

READ_SIZE = 65536
READ_BUDGET = 16 * 1024       # read in one turn: 20 flooding jobs still let a ping through
SLICE = 1024                  # bytes fed to pyte in one go (pyte: ~1 MB/s, so ~1 ms)
SCREEN_BACKLOG = 16 * 1024    # more unfed than this: the screen skips ahead to the tail
SKIP_TO = 6 * 1024
REPLAY_SIZE = 32 * 1024       # log tail replayed into a new Terminal's screen
OUTBOX_LIMIT = 1024 * 1024    # attacher keys waiting for a program that does not read
WRITE_TIMEOUT = 5.0
ECHO_WAIT = 0.5               # time a program gets to show typed text before submit keys
STALE_SCREEN = 0.1            # under a flood the screen is fed a slice this often
SUMMARY_EVERY = 5.0           # the row text while output flows: at most this often


class _Settled(Exception):
    pass


class Terminal:
    def __init__(self, job_id, master_fd, job_dir, term=None, rows=40, cols=120,
                 on_change=None, on_eof=None, log_limit=4 * 1024 * 1024, typed=False):
        self.job_id = job_id
        self.fd = master_fd
        self.job_dir = job_dir
        self.profile = TermProfile(term)
        self.screen = Screen(rows, cols)
        self.on_change = on_change
        self.on_eof = on_eof
        self.output_seen = gevent.event.Event()
        self.eof = gevent.event.Event()
        self.verify_timeout = max(3.0, 2 * self.profile.settle)
        self.write_timeout = WRITE_TIMEOUT
        self.closed = False
        self._log = OutputLog(job_dir, log_limit)
        self._typed = typed
        self._reading = working_reading()
        self._last_output = time.monotonic()
        self._unjudged = True
        self._summary_at = 0.0
        self._pending = bytearray()
        self._got_output = False
        self._flooding = False
        self._fed_at = 0.0
        self._attachers = Attachers(job_id)
        self._alt_exits_seen = 0
        self._repaint_due = False
        self._pump = None
        self._changed = None     # an Event while someone waits for a change
        self._typing = gevent.lock.Semaphore()
        hub = gevent.get_hub()
        self._readable = hub.loop.io(master_fd, 1)
        self._idle = hub.loop.idle()
        self._writer = PtyWriter(master_fd, job_id, self._wake)
        flags = fcntl.fcntl(master_fd, fcntl.F_GETFL)
        fcntl.fcntl(master_fd, fcntl.F_SETFL, flags | os.O_NONBLOCK)

    # -- the contract ---------------------------------------------------------------------

    def start(self):
        self._pump = gevent.spawn(self._run)
        return self

    @property
    def reading(self):
        return dict(self._reading)

    @property
    def judged(self):
        """The screen was judged since the last output (it has been quiet settleMs)."""
        return not self._unjudged

    @property
    def attached(self):
        return len(self._attachers)

    def text(self, last=None):
        self._catch_up()
        return self.screen.text(last)

    def attach(self, sink):
        """`sink.write_output(bytes)` must not block; returning False drops the sink.
        `sink.end(why)`, when it has one, is told when the terminal lets it go."""
        self._catch_up()
        self._alt_exits_seen = self.screen.alt_exits
        self._attachers.add(sink, self.screen.render_ansi())
        return sink

    def detach(self, sink):
        self._attachers.remove(sink)

    def write_input(self, data):
        """An attacher's keys; dropped (False) while a stalled program has a backlog."""
        if self.closed or self._writer.backlog > OUTBOX_LIMIT:
            return False
        self._writer.enqueue(bytes(data))
        return True

    def resize(self, rows, cols):
        if self.closed:
            return
        try:
            fcntl.ioctl(self.fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        except OSError as error:
            log.info("job %s: resize failed: %s", self.job_id, error)
        self._catch_up()
        self.screen.resize(rows, cols)
        self._wake()

    def type_text(self, text, mode="followUp", timeout=None):
        """Types `text` and the submit keys, then checks the text left the input line.

        followUp waits (up to `timeout` seconds, None: as long as the job lives) until
        the screen is judged not working; steer types at once."""
        with self._typing:
            if mode != "steer":
                settled = self._wait_until(lambda: self._reading["state"] != "working"
                                           or self._ended(), timeout)
                if not settled:
                    return _not_submitted("the job was still working when the wait ended")
            if self._ended():
                return _not_submitted("the job's terminal has ended")
            self._catch_up()
            before = self.screen.lines()
            payload = text.encode("utf-8")
            if payload and self.screen.bracketed_paste and ("\n" in text or "\r" in text):
                payload = b"\x1b[200~" + payload + b"\x1b[201~"
            if payload:
                if not self._write_all(payload):
                    return _not_submitted("the job is not reading its input")
                self._wait_until(lambda: self.screen.lines() != before, ECHO_WAIT)
            if not self._write_all(self.profile.submit.encode("utf-8")):
                return _not_submitted("the job is not reading its input")
            self._typed = True
            left = self._wait_until(
                lambda: left_input_line(before, self.screen.lines(), self.screen.cursor, text),
                self.verify_timeout)
            if not left:
                return _not_submitted("the text was typed but stayed on the input line")
            return {"submitted": True, "error": None}

    def close(self):
        if self.closed:
            return
        self.closed = True
        if self._pump is not None and self._pump is not getcurrent():
            self._pump.kill(block=True)
        self._writer.close()
        self._attachers.end_all("the job's terminal closed")
        self._readable.close()
        self._idle.close()
        self._log.close()
        try:
            os.close(self.fd)
        except OSError:
            pass
        self._wake()

    # -- the pump -------------------------------------------------------------------------

    def _run(self):
        try:
            self._replay_log()
            while not self._read_turn():
                if self._pending and (not self._flooding or self._screen_is_stale()):
                    self._feed_slice()
                if self._pending or self._got_output:
                    # More to do: first let the loop run everything else that is ready
                    # (timers, other connections, other jobs). sleep(0) would not: it
                    # yields to greenlets but not to the loop's timers and fds.
                    gevent.socket.wait(self._idle)
                else:
                    self._wait_readable()
        except gevent.GreenletExit:
            return
        except Exception:
            log.exception("job %s: terminal pump failed", self.job_id)
        self._finish()

    def _read_turn(self):
        """Reads what is there, up to a budget. True at EOF (EIO: the program's side
        of the pty is closed)."""
        self._got_output = False
        self._flooding = False
        chunks = []
        total = 0
        at_end = False
        while total < READ_BUDGET:
            try:
                data = os.read(self.fd, READ_SIZE)
            except BlockingIOError:
                break
            except InterruptedError:
                continue
            except OSError as error:
                if error.errno != errno.EIO:
                    raise
                data = b""
            if not data:
                at_end = True
                break
            chunks.append(data)
            total += len(data)
        if chunks:
            self._take(chunks[0] if len(chunks) == 1 else b"".join(chunks))
        # A full budget: more is waiting. The screen then gets a slice only now and
        # then; it skips ahead meanwhile and catches up from the tail when it is read.
        self._flooding = total >= READ_BUDGET
        return at_end

    def _screen_is_stale(self):
        return (self._reading["status"] != "busy"
                or time.monotonic() - self._fed_at >= STALE_SCREEN)

    def _take(self, data):
        self._got_output = True
        self._log.write(data)
        self._last_output = time.monotonic()
        self._unjudged = True
        if not self.output_seen.is_set():
            self.output_seen.set()
        if self._attachers:
            self._attachers.live_output(data)
        self._pending += data
        if len(self._pending) > SCREEN_BACKLOG:
            self._skip_ahead()

    def _skip_ahead(self):
        tail = self._pending[-SKIP_TO:]
        # Start the tail at a line or a sequence so the gap cuts nothing in half.
        cuts = [index for index in (tail.find(b"\n"), tail.find(b"\x1b")) if 0 <= index < 1024]
        if cuts:
            cut = min(cuts)
            tail = tail[cut + 1:] if tail[cut:cut + 1] == b"\n" else tail[cut:]
        self._pending = bytearray(tail)
        self.screen.skip()

    def _feed_slice(self):
        self._fed_at = time.monotonic()
        chunk = bytes(self._pending[:SLICE])
        del self._pending[:SLICE]
        self.screen.feed(chunk)
        answers = self.screen.answers()
        if answers and not self._attachers:
            # With an attacher its own terminal answers; answering too would answer twice.
            self._writer.enqueue(answers)
        if self.screen.alt_exits != self._alt_exits_seen:
            self._alt_exits_seen = self.screen.alt_exits
            self._repaint_due = bool(self._attachers)
        if self._repaint_due and not self._pending:
            self._repaint_due = False
            self._attachers.send(self.screen.render_ansi())
        now = time.monotonic()
        if self._reading["state"] != "working" or (self._reading["status"] != "busy"):
            self._summary_at = now
            self._set_reading(working_reading(last_line(self.screen.lines())))
        elif now - self._summary_at >= SUMMARY_EVERY:
            self._summary_at = now
            self._set_reading(working_reading(last_line(self.screen.lines())))
        self._wake()

    def _catch_up(self):
        """Feeds the whole backlog (at most SCREEN_BACKLOG) before the screen is read."""
        while self._pending:
            self._feed_slice()

    def _wait_readable(self):
        timeout = None
        if self._unjudged:
            timeout = max(0.0, self._last_output + self.profile.settle - time.monotonic())
        if timeout is None:
            gevent.socket.wait(self._readable)
            return
        try:
            gevent.socket.wait(self._readable, timeout, _Settled())
        except _Settled:
            self._judge()

    def _judge(self):
        if time.monotonic() - self._last_output < self.profile.settle:
            return   # output came meanwhile; the next wait is shorter
        self._unjudged = False
        self._set_reading(self.profile.judge(self.screen.lines(), self._typed))
        if not self._attachers and not self._pending:
            self.screen.freeze()   # quiet: its cells packed small until output comes

    def _replay_log(self):
        """A terminal taken over after a daemon restart starts from its log's tail."""
        tail = self._log.tail(REPLAY_SIZE)
        if not tail:
            return
        start = tail.find(b"\n")
        if 0 <= start < 4096 and len(tail) >= REPLAY_SIZE:
            tail = tail[start + 1:]
        for offset in range(0, len(tail), SLICE):
            self.screen.feed(tail[offset:offset + SLICE])
            gevent.sleep(0)
        self.screen.answers()   # those queries were answered when they were new

    def _finish(self):
        self._catch_up()
        self.eof.set()
        self._attachers.end_all("the job ended")
        self._wake()
        if self.on_eof is not None:
            try:
                self.on_eof()
            except Exception:
                log.exception("job %s: on_eof failed", self.job_id)

    # -- readings and waiting -------------------------------------------------------------

    def _set_reading(self, reading):
        if reading == self._reading:
            return
        self._reading = reading
        self._wake()
        if self.on_change is not None:
            try:
                self.on_change(dict(reading))
            except Exception:
                log.exception("job %s: on_change failed", self.job_id)

    def _wake(self):
        changed, self._changed = self._changed, None
        if changed is not None:
            changed.set()

    def _wait_until(self, predicate, timeout):
        deadline = None if timeout is None else time.monotonic() + timeout
        while not predicate():
            if self._ended() and not self._pending:
                return predicate()
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                return False
            if self._changed is None:
                self._changed = gevent.event.Event()
            self._changed.wait(remaining)
        return True

    def _ended(self):
        return self.closed or self.eof.is_set()

    # -- writing --------------------------------------------------------------------------

    def _write_all(self, data):
        """Queues `data` and waits until the program's side took all of it. On timeout
        what it did not take is withdrawn, so it cannot arrive late."""
        writer = self._writer
        start = writer.queued_end
        end = start + len(data)
        writer.enqueue(data)
        if self._wait_until(lambda: writer.written >= end, self.write_timeout):
            return True
        writer.withdraw(start, end)
        return False


def _not_submitted(error):
    return {"submitted": False, "error": error}
