"""The daemon's listening socket: who may connect (the peer's uid, checked before a byte
of it is read), whether its process runs inside a job (then it is never the person:
roost.jobs.origins, read from the peer's pid at accept), and how many (at most 1024:
the next is told why and closed)."""

import errno
import logging
import os
import select

import gevent

from roost.errors import LIMIT, RoostError
from roost.server.connection import Connection, error_line
from roost.server.unread import Unread
from roost.unix import private_socket
from roost.unix.fds import bytes_ready

log = logging.getLogger(__name__)

MAX_CONNECTIONS = 1024


class Server:
    """Accepts connections on the daemon's unix socket; `run_op(session, op, args)` runs
    each request (roost.ops.run with the daemon's services)."""

    def __init__(self, listener, run_op, place_of=lambda pid: None):
        self.listener = listener
        self.run_op = run_op
        self.place_of = place_of      # fn(pid) -> None for the person's process, else where in a job
        self.connections = set()
        self.unread = Unread()        # what clients may leave unread, by job and by process
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
                sock._sock.send(error_line(None, RoostError(LIMIT, f"too many connections (at most {MAX_CONNECTIONS})")))
            except OSError:
                pass
            sock.close()
            return
        conn = Connection(self, sock, self.place_of(pid), pid)
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


def _holds_unread(fd):
    try:
        return bytes_ready(fd) > 0
    except OSError:
        return True    # unknown: leave the connection to its own greenlet
