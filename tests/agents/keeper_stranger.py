"""A process of the user that is not the daemon asks the keeper for what only the daemon
may have: `keeper_stranger.py SOCKET SECRET|@FILE OP...`. For each op, a connection of
its own: a hello with the secret (read from FILE, as a job outside a jail could read the
home's private/keeper.secret), then the op. Prints one JSON line: per op, the answers it got and
how many fds came with them."""

import json
import socket
import sys

REQUESTS = {
    "fds": {"carry": True},
    "spawn": {"job": "stranger", "argv": ["sh", "-c", "echo as the person"], "env": {}, "cwd": "/"},
    "signal": {"job": "*", "signal": "SIGKILL"},
    "release": {"job": "*"},
    "bye": {},
    "hello": {"version": 3},
    "probe": {"job": "*"},
}


def attempt(path, secret, op, job):
    got = {"answers": [], "fds": 0}
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(10)
    try:
        sock.connect(path)
        request = dict(REQUESTS[op], id=2, op=op)
        if request.get("job") == "*":
            request["job"] = job
        lines = [{"id": 1, "op": "hello", "version": 3, "secret": secret}, request]
        sock.sendall(b"".join(json.dumps(line).encode() + b"\n" for line in lines))
        while True:
            data, ancillary, _flags, _ = sock.recvmsg(65536, socket.CMSG_SPACE(253 * 4))
            for _level, _kind, payload in ancillary:
                got["fds"] += len(payload) // 4
            if not data:
                break
            got["answers"].extend(json.loads(line) for line in data.splitlines() if line.strip())
    except OSError as error:
        got["error"] = type(error).__name__
    finally:
        sock.close()
    return got


def main():
    path, secret, job, ops = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    if secret.startswith("@"):
        with open(secret[1:]) as handle:
            secret = handle.read().strip()
    print(json.dumps({op: attempt(path, secret, op, job) for op in ops}), flush=True)


if __name__ == "__main__":
    main()
