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
