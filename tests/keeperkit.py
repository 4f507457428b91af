"""A connection to a keeper, speaking its wire (roost.keeper.wire) as the daemon does."""

import array
import json
import socket
import time


class KeeperConnection:
    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(15)
        self.sock.connect(path)
        self.buffer = b""
        self.fds = []
        self.events = []
        self.next_id = 0

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
