"""Owner-only unix sockets, for the daemon's and the keeper's listeners alike: made 0600
by bind itself, and each peer's credentials read before a byte of it is. Standard
library only: the keeper imports it."""

import os
import socket
import struct

_PEERCRED = struct.Struct("3i")


def listen(path, backlog):
    """A listening unix socket at `path` (nothing may be there), 0600 from its first
    moment: bound under umask 177, never a moment with other modes on it."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old_umask = os.umask(0o177)
    try:
        listener.bind(path)
    finally:
        os.umask(old_umask)
    os.chmod(path, 0o600)     # whatever a filesystem made of the umask
    listener.listen(backlog)
    return listener


def peer_credentials(sock):
    """(pid, uid, gid) of the process at the other end (SO_PEERCRED)."""
    return _PEERCRED.unpack(sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _PEERCRED.size))


def peer_uid(sock):
    return peer_credentials(sock)[1]


class NotOurs(Exception):
    """The socket is not the user's own daemon's: the text says whose it is."""


def check_place(path):
    """Before connecting: the socket's directory is ours and no one else may write in it
    (else someone else could have put their socket there), and the socket itself is
    ours. Raises NotOurs."""
    directory = os.path.dirname(os.path.abspath(path))
    uid = os.getuid()
    try:
        info = os.stat(directory)
    except OSError:
        return      # nothing there: connecting says so
    if info.st_uid != uid:
        raise NotOurs(f"{directory} belongs to uid {info.st_uid}, not to you (uid {uid})")
    if info.st_mode & 0o022:
        raise NotOurs(f"{directory} may be written by others (mode {info.st_mode & 0o777:o})")
    try:
        info = os.lstat(path)
    except OSError:
        return
    if info.st_uid != uid:
        raise NotOurs(f"{path} belongs to uid {info.st_uid}, not to you (uid {uid})")


def check_peer(sock, path):
    """After connecting, before a byte is sent: the process that listens is ours
    (SO_PEERCRED). Raises NotOurs."""
    pid, uid, _ = peer_credentials(sock)
    if uid != os.getuid():
        raise NotOurs(f"{path} is served by uid {uid} (pid {pid}), not by you (uid {os.getuid()})")
