"""One client's connection: reading its request lines, answering them in order, and
writing answers and events without ever blocking the loop (spec "The wire").

One greenlet reads each connection. A request line is parsed there; an op marked quick
with nothing queued before it runs inline (no greenlet switch: pipelined pings stay
cheap); anything else goes to the connection's queue, drained in order by one worker
greenlet, so answers always leave in request order. Nothing outside this package sees
bytes.

Limits (spec "Others"): a line over 4 MiB ends the connection without reading the rest;
at most 256 requests in flight on one connection (it is not read meanwhile); a client
that leaves 16 MiB of answers and events unread is dropped, and so is one whose unread
bytes would pass what its job's (or its process's) connections may leave together
(unread.py).
"""

import collections
import errno
import logging

import gevent
import gevent.event

from roost import codec
from roost.errors import BAD_REQUEST, INTERNAL, RoostError
from roost.framing import MAX_LINE, LineReader, LineTooLong
from roost.ops import QUICK
from roost.ops.session import Session

log = logging.getLogger(__name__)

MAX_IN_FLIGHT = 256
READ_SIZE = 64 * 1024


class Connection:
    """One client. Its reading greenlet owns the socket; others only call send_event."""

    def __init__(self, server, sock, inside=None, peer_pid=None):
        self.server = server
        self.sock = sock
        self.closed = False
        self.session = Session(self, inside, peer_pid)
        self._unread = server.unread.account(inside, peer_pid)     # its share of what may wait unread
        self._raw = sock._sock          # the non-blocking socket under gevent's wrapper
        self._outbox = bytearray()
        self._writer = None
        self._queue = collections.deque()
        self._busy = False
        self._worker = None
        self._room = gevent.event.Event()   # set while fewer than MAX_IN_FLIGHT wait
        self._room.set()
        self._corked = False      # answering what one read brought: one send for all of it

    # -- sending --------------------------------------------------------------
    @property
    def unsent(self):
        """Bytes queued for this client that the socket has not taken yet."""
        return len(self._outbox)

    def send_event(self, event):
        self._send(codec.encode(event) + b"\n")

    def send_line(self, data):
        self._send(data)

    def _send(self, data):
        if self.closed:
            return
        if self._corked:
            self._hold(data)
            return
        if not self._outbox:
            try:
                sent = self._raw.send(data)
            except BlockingIOError:
                sent = 0
            except OSError:
                self.close()
                return
            if sent == len(data):
                return
            data = data[sent:]
        if self._hold(data) and self._writer is None:
            self._writer = gevent.spawn(self._drain)

    def _hold(self, data):
        """Queue `data` unsent; False (and the client dropped) past what it may leave unread."""
        if not self._unread.take(len(data)):
            log.warning("dropping a client (%s) that would leave %d bytes unread, past its budget",
                        self._unread.describe(), len(self._outbox) + len(data))
            self.close()
            return False
        self._outbox += data
        return True

    def _let_go(self):
        """Forget what is queued, its bytes given back (a new buffer: the old one freed)."""
        self._outbox = bytearray()
        self._unread.give_all()

    def _uncork(self):
        if not self._corked:
            return
        self._corked = False
        if self._outbox and self._writer is None and not self.closed:
            data = bytes(self._outbox)
            self._let_go()
            self._send(data)

    def _drain(self):
        try:
            while self._outbox and not self.closed:
                sent = self.sock.send(self._outbox)   # gevent: waits until writable
                del self._outbox[:sent]
                self._unread.give(sent)
        except OSError:
            self.close()
        finally:
            self._writer = None

    def flush(self, timeout):
        """Wait until everything queued was written (used at shutdown)."""
        with gevent.Timeout(timeout, False):
            worker = self._worker
            if worker is not None and worker is not gevent.getcurrent():
                worker.join()
            writer = self._writer
            if writer is not None:
                writer.join()

    def close(self):
        if self.closed:
            return
        self.closed = True
        self._room.set()
        self._let_go()
        self.session.close()
        try:
            self.sock.close()
        except OSError:
            pass
        self.server.forget(self)

    def fileno(self):
        return self._raw.fileno()

    @property
    def idle(self):
        """Nothing waiting, running or unsent: closing it now loses nothing."""
        return not (self._queue or self._busy or self._outbox)

    # -- reading --------------------------------------------------------------
    def serve(self):
        try:
            self._read_loop()
        except OSError as error:
            if error.errno not in (errno.ECONNRESET, errno.EPIPE, errno.EBADF):
                log.warning("connection error: %s", error)
        finally:
            # Answers already queued still go out before the socket closes.
            if not self.closed and not self.idle:
                self.flush(5)
            self.close()

    def _read_loop(self):
        reader = LineReader(MAX_LINE)
        raw, sock = self._raw, self.sock
        drained = False
        while not self.closed:
            if drained:
                # The last read took less than it could: the client has nothing more yet.
                # Waiting for it first spares the read that would only say EAGAIN (one
                # system call of three per request from a client that waits for answers).
                sock._wait(sock._read_event)
            try:
                chunk = raw.recv(READ_SIZE)
            except BlockingIOError:
                drained = True
                continue
            if not chunk:
                return
            drained = len(chunk) < READ_SIZE
            try:
                lines = reader.lines(chunk)
            except LineTooLong:
                return self._too_long()
            if len(lines) == 1 and not self._queue:
                # One request and nothing waiting before it (a client that waits for each
                # answer): nothing to cork, no room to wait for.
                self._take(lines[0])
                continue
            # The answers of pipelined requests answered inline leave in one send.
            self._corked = len(lines) > 1
            try:
                for line in lines:
                    if not self._room.is_set():
                        self._uncork()
                        self._room.wait()   # at most MAX_IN_FLIGHT waiting: stop reading meanwhile
                    if self.closed:
                        return
                    self._take(line)
            finally:
                self._uncork()

    def _too_long(self):
        log.warning("a request line over %d bytes: connection closed", MAX_LINE)
        self._send(error_line(None, RoostError(BAD_REQUEST, "request line over 4 MiB")))
        self.flush(1)

    def _take(self, line):
        item = _parse(line)
        request_id, op_name, args, problem, loose = item
        if not self._queue and not self._busy and (problem is not None or op_name in QUICK):
            self._answer(item)
            return
        self._queue.append(item)
        if len(self._queue) + 1 >= MAX_IN_FLIGHT:
            self._room.clear()
        if self._worker is None:
            self._worker = gevent.spawn(self._work)

    def _work(self):
        try:
            while self._queue and not self.closed:
                item = self._queue.popleft()
                self._busy = True
                try:
                    self._answer(item)
                finally:
                    self._busy = False
                    if len(self._queue) + 1 < MAX_IN_FLIGHT:
                        self._room.set()
        finally:
            self._worker = None

    def _answer(self, item):
        request_id, op_name, args, problem, loose = item
        if problem is not None:
            self._send(error_line(request_id, problem))
            return
        try:
            result = self.server.run_op(self.session, op_name, args, loose)
            if type(request_id) is RawId:
                line = answer_line(request_id, {"ok": True, "result": result})
            else:
                line = codec.encode({"id": request_id, "ok": True, "result": result}) + b"\n"
        except RoostError as error:
            line = error_line(request_id, error)
        except Exception:
            log.exception("op %s failed", op_name)
            line = error_line(request_id, RoostError(INTERNAL, f"{op_name} failed inside the daemon (see daemon.log)"))
        self._send(line)


def _parse(line):
    """(id, op, args, problem, loose): problem is a RoostError for anything malformed.

    A line the codec refuses that is JSON all the same (a number past 64 bits, one no
    double holds, a lone surrogate, nesting past the codec's depth) is read `loose`ly by
    the standard library's decoder: its id is answered as the client wrote it (RawId),
    and what it holds is refused once the op's contract has checked its arguments."""
    loose = False
    try:
        request = codec.decode(line)
    except (ValueError, UnicodeDecodeError) as error:
        request = codec.decode_loosely(line)
        if request is None:
            return None, None, None, RoostError(BAD_REQUEST, f"not a JSON request line: {error}"), False
        loose = True
    if not isinstance(request, dict):
        return None, None, None, RoostError(BAD_REQUEST, "a request is a JSON object"), False
    request_id = request.get("id")
    if isinstance(request_id, (dict, list)):
        request_id = None
    op_name = request.get("op")
    if loose:
        problem = _unholdable(request, ("id", "op"))
        if request_id is not None:
            request_id = RawId(codec.as_json(request_id))
        if problem is not None:
            return request_id, None, None, problem, loose
    if not isinstance(op_name, str) or not op_name:
        return request_id, None, None, RoostError(BAD_REQUEST, "op must be a non-empty string"), loose
    args = request.get("args")
    if args is None:
        args = {}
    elif not isinstance(args, dict):
        return request_id, None, None, RoostError(BAD_REQUEST, "args must be an object"), loose
    return request_id, op_name, args, None, loose


def _unholdable(request, names):
    for name in names:
        problem = codec.unholdable(request.get(name))
        if problem:
            return RoostError(BAD_REQUEST, f"{name}: {problem}")
    return None


class RawId:
    """A request's id as JSON text (from a line read loosely), answered as it was sent."""

    __slots__ = ("text",)

    def __init__(self, text):
        self.text = text.encode("ascii")


def answer_line(request_id, body):
    """The answer to a RawId: `body` ({ok, result} or {ok, error, code}) with the id
    first, as the client sent it."""
    return b'{"id":' + request_id.text + b"," + codec.encode(body)[1:] + b"\n"


def error_line(request_id, error):
    if type(request_id) is RawId:
        return answer_line(request_id, {"ok": False, "error": error.text, "code": error.code})
    return codec.encode({"id": request_id, "ok": False, "error": error.text, "code": error.code}) + b"\n"
