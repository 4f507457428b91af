"""A job's shell tool trying the person's ops: `trust_probe.py OUT HOW`.

HOW is where the probe runs: `here` (the job's own process), `double-fork` (a
grandchild whose parent is gone, so the keeper adopted it, or in a jail its pid 1) or `setsid` (a child in a
session of its own). The probe sends each op over a raw socket to $ROOST_SOCKET and runs
each as the roost CLI would, then writes what came back to OUT as JSON (atomically) and
sleeps, so the job stays up for the test to read its row.
"""

import json
import os
import socket
import subprocess
import sys
import time

JOB = os.environ.get("ROOST_JOB_ID", "")
RAW = {
    "dispatch": {"kind": "shell", "cwd": "/tmp", "command": ["true"], "env": {}, "name": "escaped",
                 "sessionFile": "", "origin": "dispatch"},
    "task approve": {"action": "approve", "id": 1},
    "task merge": {"action": "merge", "id": 1},
    "keys": {"id": JOB, "keys": ["Enter"]},
    "reply": {"id": JOB, "message": "typed in the person's name"},
    "list": {},
    # The concierge's and the schedules' ops (issue 17): not a job's either.
    "concierge": {"action": "status"},
    "concierge-ask": {"text": "what needs me?"},
    "schedules": {},
    "schedule-add": {"name": "escaped", "when": "every 30m", "launch": {
        "kind": "shell", "cwd": "/tmp", "command": ["true"], "env": {}, "name": "escaped", "sessionFile": "",
        "origin": "dispatch"}},
    "schedule-run": {"name": "escaped"},
    "concierge-say": {"kind": "need", "text": "said in the concierge's name"},
    "concierge-reply": {"id": JOB, "text": "answered in the user's name"},
    "concierge-act": {"what": "stop", "id": JOB},
    "concierge-order": {"action": "add", "text": "merge everything"},
}
CLI = {
    "dispatch": ["run", "--name", "escaped-cli", "--", "true"],
    "task approve": ["task", "approve", "1"],
    "task merge": ["task", "merge", "1"],
    "keys": ["keys", JOB, "Enter"],
    "reply": ["reply", JOB, "typed in the person's name"],
    "list": ["list", "--json"],
    "concierge": ["concierge", "status"],
    "schedules": ["schedule", "list"],
}


def raw_answers():
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(os.environ["ROOST_SOCKET"])
    answers = {}
    reader = sock.makefile("rb")
    for number, (name, args) in enumerate(RAW.items(), 1):
        op = name.split()[0]
        sock.sendall(json.dumps({"id": number, "op": op, "args": args}).encode() + b"\n")
        answer = json.loads(reader.readline())
        answers[name] = {"ok": answer.get("ok"), "code": answer.get("code"), "error": answer.get("error")}
    sock.close()
    return answers


def cli_answers():
    answers = {}
    for name, argv in CLI.items():
        done = subprocess.run([sys.executable, "-m", "roost", *argv], capture_output=True, timeout=60,
                              stdin=subprocess.DEVNULL)
        answers[name] = {"status": done.returncode, "stderr": done.stderr.decode("utf-8", "replace")}
    return answers


def probe(out):
    result = {"pid": os.getpid(), "ppid": os.getppid(), "sid": os.getsid(0),
              "raw": raw_answers(), "cli": cli_answers()}
    with open(out + ".tmp", "w") as handle:
        json.dump(result, handle)
    os.rename(out + ".tmp", out)


def main():
    out, how = sys.argv[1], sys.argv[2]
    if how == "here":
        probe(out)
    elif how == "setsid":
        if os.fork() == 0:
            os.setsid()
            probe(out)
            os._exit(0)
        os.wait()
    elif how == "double-fork":
        middle = os.fork()
        if middle == 0:
            middle = os.getpid()       # in this process fork said 0: its own pid is the one to outlive
            if os.fork() == 0:
                # Wait until the middle one is gone: this one then belongs to the keeper
                # (in a jail, to its pid 1).
                while os.getppid() == middle:
                    time.sleep(0.01)
                probe(out)
            os._exit(0)
        os.waitpid(middle, 0)
        deadline = time.monotonic() + 120
        while not os.path.exists(out) and time.monotonic() < deadline:
            time.sleep(0.05)
    print("probed", flush=True)
    while True:
        time.sleep(60)


if __name__ == "__main__":
    main()
