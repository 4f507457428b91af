"""A job trying the walls of its jail: `jail_probe.py KEEPER_SOCKET OTHER_JOB_DIR OUTSIDE GRANTED`.

It tries to reach the keeper's socket and ask it for every job's terminal (`fds`), to
read another job's directory, to write a file in OUTSIDE (a directory it was not given),
in its working directory, in $TMPDIR and in GRANTED (its `sandbox.write`), and reads its
PORT and the processes it can see. What came of each goes to $ROOST_JOB_DIR/probe.json
(written atomically); then it sleeps, so the job stays up for the test to look at.
"""

import errno
import json
import os
import socket
import sys
import time


def attempt(fn):
    try:
        return {"ok": True, "value": fn()}
    except OSError as error:
        return {"ok": False, "errno": errno.errorcode.get(error.errno, str(error.errno)), "error": str(error)}


def ask_keeper(path):
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(5)
    sock.connect(path)
    sock.sendall(b'{"id": 1, "op": "fds"}\n')
    data, ancillary, _, _ = sock.recvmsg(65536, socket.CMSG_SPACE(64 * 4))
    sock.close()
    return {"answer": data.decode("utf-8", "replace")[:200], "fds": sum(len(item[2]) // 4 for item in ancillary)}


def write(directory):
    path = os.path.join(directory, f"written-by-{os.environ.get('ROOST_JOB_ID')}")
    with open(path, "w") as handle:
        handle.write("from the jail\n")
    os.unlink(path)
    return path


def main():
    keeper_socket, other_job_dir, outside, granted = sys.argv[1:5]
    found = {
        "keeper": attempt(lambda: ask_keeper(keeper_socket)),
        "other job": attempt(lambda: os.listdir(other_job_dir)),
        "outside": attempt(lambda: write(outside)),
        "cwd": attempt(lambda: write(os.getcwd())),
        "tmp": attempt(lambda: write(os.environ.get("TMPDIR", "/tmp"))),
        "granted": attempt(lambda: write(granted)),
        "port": os.environ.get("PORT"),
        "ports": os.environ.get("ROOST_PORTS"),
        "tmpdir": os.environ.get("TMPDIR"),
        "pids": sorted(int(name) for name in os.listdir("/proc") if name.isdigit()),
    }
    out = os.path.join(os.environ["ROOST_JOB_DIR"], "probe.json")
    with open(out + ".tmp", "w") as handle:
        json.dump(found, handle)
    os.rename(out + ".tmp", out)
    print("probed", flush=True)
    while True:
        time.sleep(60)


if __name__ == "__main__":
    main()
