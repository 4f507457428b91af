"""The keeper's socket, as both ends see it: where it is, the version of its protocol, and
one connection's framing (JSON lines; fds travel with the bytes of the line that
carries them, SCM_RIGHTS). Standard library only: the keeper imports it.

The wire: JSON lines on a unix stream socket (0600), served to the daemon alone
(roost.keeper.admission: its pid by SO_PEERCRED, then the secret in its hello; version 3). Requests
carry `id` and `op`; answers `{"id", "ok", ...}`; a message that carries fds says how
many (`"fds": n`) and they travel with its bytes, in order. Pushed: `{"event": "exited", ...}`.

    hello   {version, secret}                      -> {version, pid, jobs}  (first, or refused and closed)
    spawn   {job, argv, env, cwd, rows, cols, umask, carry?} -> {pid, carry?} + the master fd
    fds     {carry?}                               -> {jobs: [{job, pid, exited, carry?}]} + its fds
    signal  {job, signal, group}                   -> {sent}
    release {job, pid?}                            -> {}   (the keeper closes its copy)
    bye     {}                                     -> {}   (exit once no job runs; a hello undoes it)
    probe   {job}                                  -> {evidence}   (version 4; null for a job not running)

`carry` (version 2): the daemon asks for a job's carry pipe, which it moves output through
from the pty to the log (roost.term.intake); the keeper holds a copy of both ends, so
what a daemon killed half way had taken off the pty waits there for the next. Each job
that has one is marked `carry: true` and its master fd is followed by the pipe's read
and write ends. A daemon that does not ask gets the master alone.

`probe` (version 4): whether the job's processes wait for its terminal, from their
blocked calls (roost.unix.terminal_waits), which only an ancestor may read under Yama's
default ptrace_scope: the keeper is one.
"""

import hashlib
import os
import socket
import struct

from roost.framing import MAX_LINE, LineReader, encode_line

VERSION = 4        # 2: carry pipes (roost.keeper.keeper); 3: only the daemon is served (admission.py); 4: probe
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
