"""`roost proxy`'s pump: two byte streams joined both ways (standard input and output on
one side, the daemon's socket on the other), byte for byte, until either side closes.
Non-blocking with a buffer each way, so a side that stops reading never stops the other
direction (a daemon pushing output while the person types)."""

import errno
import os
import select
import socket

CHUNK = 65536


def bridge(fd_in, fd_out, sock):
    """Returns when the daemon closed the connection or standard output went away. The
    end of standard input is passed on as a half-close: the daemon's answers still come."""
    sock.setblocking(False)
    os.set_blocking(fd_in, False)
    os.set_blocking(fd_out, False)
    to_daemon = bytearray()
    to_out = bytearray()
    input_open = True
    half_closed = False
    while True:
        readers = [sock] if len(to_out) < 4 * CHUNK else []
        if input_open and len(to_daemon) < 4 * CHUNK:
            readers.append(fd_in)
        writers = ([sock] if to_daemon else []) + ([fd_out] if to_out else [])
        readable, writable, _ = select.select(readers, writers, [])
        if fd_in in readable:
            data = _read(fd_in)
            if data == b"":
                input_open = False
            elif data:
                to_daemon += data
        if sock in readable:
            try:
                data = sock.recv(CHUNK)
            except (BlockingIOError, InterruptedError):
                data = None
            except OSError:
                data = b""
            if data == b"":
                _flush(fd_out, to_out)
                return
            if data:
                to_out += data
        if sock in writable and to_daemon:
            try:
                del to_daemon[:sock.send(to_daemon)]
            except (BlockingIOError, InterruptedError):
                pass
            except OSError:
                _flush(fd_out, to_out)
                return
        if fd_out in writable and to_out:
            try:
                del to_out[:os.write(fd_out, to_out)]
            except (BlockingIOError, InterruptedError):
                pass
            except OSError:
                return          # standard output is gone (ssh hung up): nothing to carry
        if not input_open and not to_daemon and not half_closed:
            half_closed = True
            _half_close(sock)


def _read(fd):
    try:
        return os.read(fd, CHUNK)
    except (BlockingIOError, InterruptedError):
        return None
    except OSError as error:
        if error.errno == errno.EIO:
            return b""
        raise


def _half_close(sock):
    try:
        sock.shutdown(socket.SHUT_WR)
    except OSError:
        pass


def _flush(fd_out, pending):
    """What was read from the daemon before it closed still goes out."""
    os.set_blocking(fd_out, True)
    try:
        while pending:
            del pending[:os.write(fd_out, pending)]
    except OSError:
        pass
