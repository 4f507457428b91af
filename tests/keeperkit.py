"""A connection to a keeper, speaking its wire (roost.keeper.wire) as the daemon does,
and what makes a test's process the daemon to a keeper (the home's daemon.lock)."""

import array
import contextlib
import json
import os
import socket
import subprocess
import sys
import time

from conftest import ROOT, wait_for
from roost.keeper import wire as keeper_wire
from roost.unix import pidlock


@contextlib.contextmanager
def as_the_daemon(home):
    """This test's process holds the home's daemon lock: to the keeper, it is the daemon."""
    lock = pidlock.take(os.path.join(home, "daemon.lock"))
    assert lock is not None, "a daemon holds the lock"
    try:
        yield
    finally:
        os.close(lock)


class KeeperConnection:
    """A connection to a keeper; with `secret`, it proves itself with a hello first (its
    process must hold the home's daemon.lock, as `as_the_daemon` makes it)."""

    def __init__(self, path, secret=None):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(15)
        self.sock.connect(path)
        self.buffer = b""
        self.fds = []
        self.events = []
        self.next_id = 0
        if secret is not None:
            answer, _ = self.call("hello", version=keeper_wire.VERSION, secret=secret)
            assert answer["ok"], answer

    def read_message(self):
        while b"\n" not in self.buffer:
            data, ancillary, flags, _ = self.sock.recvmsg(65536, socket.CMSG_SPACE(253 * 4))
            assert not flags & socket.MSG_CTRUNC
            for _, _, payload in ancillary:
                received = array.array("i")
                received.frombytes(payload[:len(payload) - len(payload) % 4])
                self.fds.extend(received)
            if not data:
                raise EOFError("the keeper closed the connection")
            self.buffer += data
        line, self.buffer = self.buffer.split(b"\n", 1)
        message = json.loads(line)
        carried = [self.fds.pop(0) for _ in range(message.get("fds", 0))]
        return message, carried

    def call(self, op, **args):
        self.next_id += 1
        self.sock.sendall(json.dumps({"id": self.next_id, "op": op, **args}).encode() + b"\n")
        while True:
            message, carried = self.read_message()
            if "event" in message:
                self.events.append(message)
                continue
            assert message["id"] == self.next_id
            return message, carried

    def wait_event(self, job, timeout=10):
        deadline = time.monotonic() + timeout
        while True:
            for event in self.events:
                if event.get("job") == job:
                    return event
            self.sock.settimeout(max(0.01, deadline - time.monotonic()))
            message, carried = self.read_message()
            assert "event" in message, message
            self.events.append(message)

    def close(self):
        self.sock.close()


def older_keeper(home, secret, version=2, without=()):
    """A keeper of `home` that says it speaks wire `version`, its ops `without` taken
    away (as one of that version has none of them), started as a daemon starts one (its
    secret on stdin); the Popen."""
    code = (f"import sys; from roost.keeper import wire; wire.VERSION = {int(version)}\n"
            "from roost.keeper.keeper import Keeper\n"
            + "".join(f"del Keeper.op_{op}\n" for op in without)
            + "from roost.keeper import main; sys.exit(main.main(sys.argv[1:]))")
    log = open(os.path.join(home, "keeper.log"), "ab")
    process = subprocess.Popen([sys.executable, "-c", code, "--home", home], stdin=subprocess.PIPE, stdout=log,
                               stderr=log, start_new_session=True, env={**os.environ, "PYTHONPATH": ROOT})
    process.stdin.write(secret.encode() + b"\n")
    process.stdin.close()
    log.close()
    wait_for(lambda: os.path.exists(keeper_wire.socket_path(home)), what="the older keeper to listen")
    return process
