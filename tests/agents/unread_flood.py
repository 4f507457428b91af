"""A job's process that asks and never reads: `unread_flood.py CONNECTIONS BYTES`. Opens
CONNECTIONS connections to its daemon and on each sends `list` requests, never reading an
answer, until the answers it asked for pass BYTES or the daemon drops the connection
(a send fails). Prints one JSON line: each connection's requests sent and whether it was
dropped, and the size of one answer."""

import json
import os
import socket
import sys
import time

REQUEST = b'{"id": 1, "op": "list", "args": {"all": true}}\n'


def answer_size(path):
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.connect(path)
        sock.sendall(REQUEST)
        data = b""
        while not data.endswith(b"\n"):
            data += sock.recv(1 << 20)
    return len(data)


def main():
    count, goal = int(sys.argv[1]), int(sys.argv[2])
    path = os.environ["ROOST_SOCKET"]
    size = answer_size(path)
    wanted = goal // size + 1
    conns = []
    for _ in range(count):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(path)
        sock.setblocking(False)
        conns.append({"sock": sock, "sent": 0, "dropped": False, "pending": b""})
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        busy = False
        for conn in conns:
            if conn["dropped"] or conn["sent"] >= wanted and not conn["pending"]:
                continue
            busy = True
            if not conn["pending"]:
                conn["pending"] = REQUEST * 16
                conn["sent"] += 16
            try:
                conn["pending"] = conn["pending"][conn["sock"].send(conn["pending"]):]
            except BlockingIOError:
                pass
            except OSError:
                conn["dropped"] = True
        if not busy:
            break
        time.sleep(0.001)
    # Those still open: a request now and then says whether the daemon dropped them
    # once it had answered what they asked (for a few seconds at most).
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and not all(conn["dropped"] for conn in conns):
        for conn in conns:
            if not conn["dropped"]:
                try:
                    conn["sock"].send(REQUEST)
                except BlockingIOError:
                    pass
                except OSError:
                    conn["dropped"] = True
        time.sleep(0.05)
    print(json.dumps({"answer": size, "connections": [{"sent": conn["sent"], "dropped": conn["dropped"]}
                                                      for conn in conns]}), flush=True)
    for conn in conns:
        conn["sock"].close()


if __name__ == "__main__":
    main()
