"""The socket server: connections, framing, limits and the envelope (spec "The wire").

One greenlet reads each connection. A request line is parsed there; an op marked quick
with nothing queued before it runs inline (no greenlet switch: pipelined pings stay
cheap); anything else goes to the connection's queue, drained in order by one worker
greenlet, so answers always leave in request order. Nothing outside this module sees
bytes.

Limits (spec "Others"): a line over 4 MiB ends the connection without reading the rest;
at most 1024 connections (the next is told why and closed); at most 256 requests in
flight on one connection (it is not read meanwhile); a client that leaves 16 MiB of
answers and events unread is dropped.
"""

import collections
import errno
import logging
import os
import select

import gevent
import gevent.event

from roost.ops import callers
from roost import codec
from roost.unix import private_socket
from roost.unix.fds import bytes_ready
from roost.errors import RoostError
from roost.ops import OPS, QUICK, Call

log = logging.getLogger(__name__)

MAX_LINE = 4 * 1024 * 1024
MAX_CONNECTIONS = 1024
MAX_IN_FLIGHT = 256
MAX_UNREAD = 16 * 1024 * 1024
READ_SIZE = 64 * 1024



class Connection:
    """One client. Its reading greenlet owns the socket; others only call send_event."""

    def __init__(self, server, sock):
        self.server = server
        self.sock = sock
        self.caller = callers.PERSON
        self.job_id = None
        self.closed = False
        self.on_close = []
        self._raw = sock._sock          # the non-blocking socket under gevent's wrapper
        self._outbox = bytearray()
        self._writer = None
        self._queue = collections.deque()
        self._busy = False
        self._worker = None
        self._room = gevent.event.Event()   # set while fewer than MAX_IN_FLIGHT wait
        self._room.set()

    # -- identity -------------------------------------------------------------
    def identify(self, caller, job_id=None):
        """The connection says who it is. A session never becomes a person again."""
        if self.caller in (callers.SESSION, callers.CONCIERGE) and caller == callers.PERSON:
            return
        self.caller = caller
        if job_id is not None:
            self.job_id = job_id

    # -- sending --------------------------------------------------------------
    @property
    def unsent(self):
        """Bytes queued for this client that the socket has not taken yet."""
        return len(self._outbox)

    def send_event(self, event):
        self._send(codec.encode(event) + b"\n")

    def _send(self, data):
        if self.closed:
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
        self._outbox += data
        if len(self._outbox) > MAX_UNREAD:
            log.warning("dropping a client that left %d bytes unread", len(self._outbox))
            self.close()
            return
        if self._writer is None:
            self._writer = gevent.spawn(self._drain)

    def _drain(self):
        try:
            while self._outbox and not self.closed:
                sent = self.sock.send(self._outbox)   # gevent: waits until writable
                del self._outbox[:sent]
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
        for callback in self.on_close:
            try:
                callback(self)
            except Exception:
                log.exception("a close callback failed")
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
        buffer = bytearray()
        while not self.closed:
            chunk = self.sock.recv(READ_SIZE)
            if not chunk:
                return
            buffer += chunk
            start = 0
            while True:
                end = buffer.find(b"\n", start)
                if end < 0:
                    break
                if end - start > MAX_LINE:
                    return self._too_long()
                line = bytes(buffer[start:end])
                start = end + 1
                self._room.wait()   # at most MAX_IN_FLIGHT waiting: stop reading meanwhile
                if self.closed:
                    return
                self._take(line)
            if start:
                del buffer[:start]
            if len(buffer) > MAX_LINE:
                return self._too_long()

    def _too_long(self):
        log.warning("a request line over %d bytes: connection closed", MAX_LINE)
        self._send(_error_line(None, RoostError("bad_request", "request line over 4 MiB")))
        self.flush(1)

    def _take(self, line):
        if line.endswith(b"\r"):
            line = line[:-1]
        if not line.strip():
            return
        request_id, op_name, args, problem = _parse(line)
        if problem is not None:
            item = (request_id, None, None, problem)
        else:
            item = (request_id, op_name, args, None)
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
        request_id, op_name, args, problem = item
        if problem is not None:
            self._send(_error_line(request_id, problem))
            return
        try:
            result = self.server.run(self, op_name, args)
            line = codec.encode({"id": request_id, "ok": True, "result": result}) + b"\n"
        except RoostError as error:
            line = _error_line(request_id, error)
        except Exception:
            log.exception("op %s failed", op_name)
            line = _error_line(request_id, RoostError("internal", f"{op_name} failed inside the daemon (see daemon.log)"))
        self._send(line)


def _parse(line):
    """(id, op, args, problem): problem is a RoostError for anything malformed."""
    try:
        request = codec.decode(line)
    except (ValueError, UnicodeDecodeError) as error:
        return None, None, None, RoostError("bad_request", f"not a JSON request line: {error}")
    if not isinstance(request, dict):
        return None, None, None, RoostError("bad_request", "a request is a JSON object")
    request_id = request.get("id")
    if isinstance(request_id, (dict, list)):
        request_id = None
    op_name = request.get("op")
    if not isinstance(op_name, str) or not op_name:
        return request_id, None, None, RoostError("bad_request", "op must be a non-empty string")
    args = request.get("args")
    if args is None:
        args = {}
    elif not isinstance(args, dict):
        return request_id, None, None, RoostError("bad_request", "args must be an object")
    return request_id, op_name, args, None


def _holds_unread(fd):
    try:
        return bytes_ready(fd) > 0
    except OSError:
        return True    # unknown: leave the connection to its own greenlet


def _error_line(request_id, error):
    return codec.encode({"id": request_id, "ok": False, "error": error.text, "code": error.code}) + b"\n"


class Server:
    """Accepts connections on the daemon's unix socket and runs ops for them."""

    def __init__(self, daemon, listener):
        self.daemon = daemon
        self.listener = listener
        self.connections = set()
        self.uid = os.getuid()
        self._acceptor = None

    def start(self):
        self._acceptor = gevent.spawn(self._accept_loop)

    def _accept_loop(self):
        while True:
            try:
                sock, _ = self.listener.accept()
            except OSError as error:
                if error.errno in (errno.EBADF, errno.EINVAL):
                    return   # the listener was closed: we are stopping
                if error.errno in (errno.EMFILE, errno.ENFILE):
                    log.error("out of file descriptors; accepting again shortly")
                    gevent.sleep(0.1)
                    continue
                raise
            self._admit(sock)

    def _admit(self, sock):
        try:
            pid, uid, gid = private_socket.peer_credentials(sock)
        except OSError:
            sock.close()
            return
        # The peer's uid is checked before a byte of it is read.
        if uid != self.uid:
            log.warning("refused a connection from uid %d (pid %d)", uid, pid)
            sock.close()
            return
        if len(self.connections) >= MAX_CONNECTIONS:
            self._close_departed()
        if len(self.connections) >= MAX_CONNECTIONS:
            try:
                sock._sock.send(_error_line(None, RoostError("limit", f"too many connections (at most {MAX_CONNECTIONS})")))
            except OSError:
                pass
            sock.close()
            return
        conn = Connection(self, sock)
        self.connections.add(conn)
        gevent.spawn(conn.serve)

    def _close_departed(self):
        """Close the idle connections whose clients have already gone.

        A client that closed still counts until its greenlet reads the end of its stream,
        and the accept loop can run first: a newcomer would be refused for a slot that is
        in fact free. Only at the limit, so one poll over every connection is cheap enough.
        A connection with unread requests is left to its greenlet, which answers them.
        """
        poller = select.poll()
        by_fd = {}
        for conn in self.connections:
            if conn.idle and not conn.closed:
                fd = conn.fileno()
                poller.register(fd, 0)      # POLLHUP is always reported
                by_fd[fd] = conn
        for fd, events in poller.poll(0):
            if events & select.POLLHUP and not _holds_unread(fd):
                by_fd[fd].close()

    def forget(self, conn):
        self.connections.discard(conn)

    def run(self, conn, op_name, args):
        fn = OPS.get(op_name)
        if fn is None:
            if op_name not in callers.REFUSED:
                raise RoostError("bad_request", f"unknown op: {op_name}")
            # An op of the spec this daemon does not offer yet: the caller's refusal
            # first (it is the same for every daemon), then say it is not here.
            callers.check(op_name, conn.caller)
            raise RoostError("unsupported", f"this roost does not offer {op_name} yet")
        callers.check(op_name, conn.caller)
        return fn(Call(self.daemon, conn, op_name, args))

    def stop_accepting(self):
        if self._acceptor is not None:
            self._acceptor.kill(block=False)
        try:
            self.listener.close()
        except OSError:
            pass

    def drain(self, timeout):
        """Send what is queued to every client, then close them all."""
        for conn in list(self.connections):
            conn.flush(timeout)
        for conn in list(self.connections):
            conn.close()
