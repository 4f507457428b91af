"""A protocol agent for tests, built on roost_agent.py: it records every reply it handled.

Each handled reply is a line of `handled.jsonl` in the job's directory ({seq, text, mode,
pid, run}, plus what it did), written when the handler is done; `run` tells its runs apart
(in a jail each run's pid is its namespace's own, the same every time). Its own stdout and stderr go to
`stdio.txt` there, so a test can prove that roost_agent writes nothing on its own.

Replies it acts on:
  exit                      report done, close, exit 0
  say STATE [QUESTION]      report only STATE (with QUESTION and the choices yes, no), run on
  hold                      wait (30 s at most) until the file `release` is in the job directory
  raise                     the handler raises (roost_agent logs it; it counts as handled)
  op NAME TIMEOUT JSON      request(NAME, JSON, TIMEOUT); records the result, the refusal's
                            code, or "timeout"
  add TITLE / claim ID / tasks   the board helpers; records their result or refusal's code

Files it watches in the job directory: `close-now` (its text is a timeout: it writes
`closing`, calls close(timeout), writes `closed`, lets a handler still running finish,
and exits 0 without another report). When roost refuses it for good it writes
`refused.json` ({code}) and exits 4.

Environment (a test's launch env): PROTO_RELAY_SOCKET speaks through that socket instead of
ROOST_SOCKET; PROTO_TOKEN uses that token instead of the job's; PROTO_MESSAGES=1 takes
peer items (on_message: each a line of `messages.jsonl`, {seq, kind, text, from, relation});
PROTO_HOLD_MESSAGES=1 then holds each until the file `release` is in the job directory.

`proto_crasher.py` is the same agent, dying in its handler on a given text.
"""

import json
import os
import sys
import threading
import time
import uuid

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)

import roost_agent  # noqa: E402

RUN = uuid.uuid4().hex      # this run of the agent


def job_dir():
    return os.environ.get("ROOST_JOB_DIR") or os.environ.get("PI_JOB_DIR")


def capture_stdio(directory):
    """Everything written on fds 1 and 2 from now on lands in stdio.txt."""
    fd = os.open(os.path.join(directory, "stdio.txt"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)


def record(directory, entry, name="handled.jsonl"):
    line = (json.dumps(entry, ensure_ascii=False) + "\n").encode("utf-8")
    fd = os.open(os.path.join(directory, name), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def call(agent, text):
    """One of the request commands; what came back, as a dict for the record."""
    command, _, rest = text.partition(" ")
    try:
        if command == "op":
            name, timeout, args = rest.split(" ", 2)
            return {"result": agent.request(name, json.loads(args), timeout=float(timeout))}
        if command == "add":
            return {"task": agent.add_task(rest)}
        if command == "claim":
            return {"task": agent.claim_task(int(rest))}
        return {"titles": [task.get("title") for task in agent.tasks()]}
    except roost_agent.RoostError as error:
        return {"code": error.code}
    except TimeoutError:
        return {"code": "timeout"}


def on_message(message):
    directory = job_dir()
    if os.environ.get("PROTO_HOLD_MESSAGES"):
        deadline = time.monotonic() + 30
        while not os.path.exists(os.path.join(directory, "release")) and time.monotonic() < deadline:
            time.sleep(0.01)
    record(directory, {"seq": message.seq, "kind": message.kind, "text": message.text,
                       "from": message.sender, "relation": message.relation}, name="messages.jsonl")


def make_agent(on_reply):
    relay = os.environ.get("PROTO_RELAY_SOCKET")
    token = os.environ.get("PROTO_TOKEN")
    messages = on_message if os.environ.get("PROTO_MESSAGES") else None
    agent = roost_agent.RoostAgent.from_env("proto-recorder", version="1", on_reply=on_reply, on_message=messages)
    if agent is None or not (relay or token):
        return agent
    return roost_agent.RoostAgent(agent.job_id, token or agent._token, relay or agent._socket_path,
                                  job_dir=job_dir(), name="proto-recorder", version="1", on_reply=on_reply,
                                  on_message=messages)


def main(crash_on=None):
    directory = job_dir()
    if directory:
        capture_stdio(directory)
    finished = threading.Event()
    count = [0]

    def on_reply(reply):
        text = reply.text
        if not text.startswith("say "):   # say: only the state it names, nothing before it
            agent.report("working", summary="handling: " + text)
        entry = {"seq": reply.seq, "text": text, "mode": reply.mode, "pid": os.getpid(), "run": RUN}
        if crash_on is not None and text == crash_on:
            marker = os.path.join(directory, "crashed-%d" % reply.seq)
            if not os.path.exists(marker):   # once: started again, it handles it
                open(marker, "w").close()
                os._exit(3)
        command = text.split(" ")[0]
        if command == "hold":
            deadline = time.monotonic() + 30
            while not os.path.exists(os.path.join(directory, "release")) and time.monotonic() < deadline:
                time.sleep(0.01)
        elif command == "raise":
            record(directory, entry)
            raise RuntimeError("a handler that fails")
        elif command in ("op", "add", "claim", "tasks"):
            entry["call"] = call(agent, text)
        record(directory, entry)
        count[0] += 1
        if text == "exit":
            finished.set()
        elif command == "say":
            words = text.split(" ", 2)
            question = words[2] if len(words) > 2 else None
            agent.report(words[1], summary="said " + words[1], question=question,
                         choices=["yes", "no"] if question else None)
        else:
            agent.report("blocked", summary="handled %d: %s" % (count[0], text))

    agent = make_agent(on_reply)
    if agent is None:
        return 2
    agent.report("blocked", summary="ready")
    close_file = os.path.join(directory, "close-now")
    while not finished.wait(0.02):
        if agent.refused is not None:
            record(directory, {"code": agent.refused.code}, name="refused.json")
            return 4
        if os.path.exists(close_file):
            with open(close_file) as handle:
                timeout = float(handle.read() or "1")
            open(os.path.join(directory, "closing"), "w").close()
            agent.close(timeout=timeout)
            open(os.path.join(directory, "closed"), "w").close()
            # A handler still running may finish before the process ends (30 s at most).
            deadline = time.monotonic() + 30
            while agent._running is not None and time.monotonic() < deadline:
                time.sleep(0.01)
            return 0
    agent.report("done", summary="bye")
    agent.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
