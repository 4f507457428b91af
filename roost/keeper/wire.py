"""The keeper's socket, as both ends see it: where it is, the version of its protocol, and
one connection's framing (JSON lines; fds travel with the bytes of the line that
carries them, SCM_RIGHTS). Standard library only: the keeper imports it."""

import hashlib
import os
import socket
import struct

from roost.framing import MAX_LINE, LineReader, encode_line

VERSION = 3        # 2: carry pipes (roost.keeper.keeper); 3: only the daemon is served (admission.py)
SOCKET_NAME = "keeper.sock"
# SCM_MAX_FD is 253 on Linux: larger batches of fds go in several sendmsg calls.
FDS_PER_SENDMSG = 200
_MAX_SOCKET_PATH = 107


def socket_path(home, env=None):
    """Where the keeper of `home` listens: beside the home's socket, or under the runtime
    directory (as roost.sock is) when the home is too deep for a unix socket path."""
    env = os.environ if env is None else env
    path = os.path.join(home, SOCKET_NAME)
    if len(os.fsencode(path)) <= _MAX_SOCKET_PATH:
        return path
    digest = hashlib.sha256(os.fsencode(home)).hexdigest()[:16]
    base = env.get("XDG_RUNTIME_DIR") or f"/tmp/roost-{os.getuid()}"
    return os.path.join(base, f"roost-{digest}", SOCKET_NAME)


class Peer:
    """One connection (the daemon, once its hello proves it). Non-blocking: a daemon that stops reading never stalls
    the keeper's reaping."""

    def __init__(self, sock):
        self.sock = sock
        self.proven = False       # its hello carried the secret (admission.py)
        self.closing = False      # refused: dropped once its refusal is sent
        self.inbox = LineReader(MAX_LINE)
        self.outbox = []          # [bytes, [fds]]: fds travel with the first byte sent

    def queue(self, message, fds=()):
        data = encode_line(message)
        fds = list(fds)
        if len(fds) <= FDS_PER_SENDMSG:
            self.outbox.append([data, fds])
            return
        # Split the line so each piece carries at most FDS_PER_SENDMSG fds, in order.
        pieces = (len(fds) + FDS_PER_SENDMSG - 1) // FDS_PER_SENDMSG
        for index in range(pieces):
            last = index == pieces - 1
            self.outbox.append([data[index:index + 1] if not last else data[index:],
                                fds[index * FDS_PER_SENDMSG:(index + 1) * FDS_PER_SENDMSG]])

    def flush(self):
        """Send what the socket takes now; False when the peer is gone."""
        while self.outbox:
            data, fds = self.outbox[0]
            try:
                if fds:
                    sent = self.sock.sendmsg([data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack(f"{len(fds)}i", *fds))])
                else:
                    sent = self.sock.send(data)
            except BlockingIOError:
                return True
            except OSError:
                return False
            if sent == len(data):
                self.outbox.pop(0)
            else:
                self.outbox[0] = [data[sent:], []]
        return True
