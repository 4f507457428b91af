"""The agent-to-agent ops (M9, M43, M50): peer_register, peers, send, watch, spawn,
handback, peer_ack, and roost's own speak_for.

A session is a connection that speaks for one: a protocol agent's after its report, a
process roost did not start after `peer_register`, or any process of a job (a terminal
agent's shell tool running `roost send ...`) after `speak_for` with its job's id and
token, which lets it take part without a report, so that job's row is still read from
its screen.
"""

import os

from roost.contract import Choice, Flag, Integer, ListOf, Text
from roost.errors import (BAD_REQUEST, FULL, NOT_FOUND, RATE_LIMITED, TOO_LONG, UNAUTHORIZED, UNSUPPORTED,
                          RoostError)
from roost.jobs import spawn_tree
from roost.jobs.launch import fold_name
from roost.jobs.launch_args import DISPATCH_ARGS
from roost.ops import callers, op
from roost.ops.agents import SPEAKER, SPEAKER_CODES, caller_of, job_for
from roost.ops.jobs import STARTS
from roost.ops.shapes import JOB_AND_NAME, PEER_ROW, SEND_RESULT
from roost.peers.messages import MAX_TEXT

HANDBACK_STATES = ("done", "blocked", "failed")
HANDBACK_TEXT = 2000
SESSION_NAME = Text("A session's id or name (`peers` lists them).", min_length=1, trim=True)


def _asker(call):
    return call.services.directory.of_session(call.session)


# Who asks, on a session's connection (the directory's of_session).
ASKER = (UNAUTHORIZED,)


@op("speak_for", args=SPEAKER, result=JOB_AND_NAME, codes=SPEAKER_CODES)
def speak_for(call):
    job = job_for(call)
    if not job.speaks:
        raise RoostError(UNAUTHORIZED, f"job {job.id} has ended: it speaks for no one")
    call.session.identify(caller_of(job), job.id)
    return {"id": job.id, "name": job.name}


@op("peer_register", args={
    "name": Text("Spaces folded, cut at 200.", min_length=1, trim=True),
    "cwd": Text("An absolute path: where it works (its project).", min_length=1),
    "pid": Integer("The pid that owns the session's writer lock.", minimum=1),
    "session": Text("Its session file.", default=None),
}, result={"id": Text()})
def peer_register(call):
    name = fold_name(call.args["name"])
    cwd = call.args["cwd"]
    if "\0" in cwd or not cwd.startswith("/"):
        # Its project is found from it (the board's actions): a path the OS can take.
        raise RoostError(BAD_REQUEST, f"cwd must be an absolute path, not {cwd!r}")
    pid = call.args["pid"]
    session_file = call.args["session"]
    if call.session.caller == callers.SESSION and call.session.job_id:
        raise RoostError(BAD_REQUEST, "this connection already speaks for a job")
    peer_id = call.services.directory.register(call.session, name, cwd, pid, session_file)
    call.session.identify(callers.SESSION)
    return {"id": peer_id}


@op("peers", args={}, result={"peers": ListOf(PEER_ROW)}, codes=ASKER)
def peers(call):
    return {"peers": call.services.directory.listed(_asker(call))}


@op("send", args={"to": SESSION_NAME,
                  "message": Text(min_length=1, max_length=MAX_TEXT, trim=True, typed="message", over=TOO_LONG)},
    result=SEND_RESULT, codes=ASKER + (NOT_FOUND, TOO_LONG, RATE_LIMITED, FULL, UNSUPPORTED))
def send(call):
    return call.services.messenger.send(_asker(call), call.args["to"], call.args["message"])


WATCH_WHEN = Choice(("idle", "ended"), "idle: its next stop (done, a question, failed, stopped, removed); ended: "
                    "failed, stopped or removed.")


@op("watch", args={"id": SESSION_NAME, "when": WATCH_WHEN},
    result={"id": Text(), "name": Text(), "when": WATCH_WHEN,
            "fired": Flag("It was already so: the notice went out at once.")},
    codes=ASKER + (NOT_FOUND, FULL, UNSUPPORTED))
def watch(call):
    return call.services.watches.add(_asker(call), call.args["id"], call.args["when"])


@op("spawn", args={"launch": DISPATCH_ARGS}, result=JOB_AND_NAME,
    codes=ASKER + (UNSUPPORTED, UNAUTHORIZED, FULL) + STARTS)
def spawn(call):
    """A session's child: its row carries parentSession and rootSession. A protocol
    agent does not spawn: its children would have no panel to show in. At most 16
    running children per session and 64 per tree (`full`, roost.jobs.spawn_tree)."""
    asker = _asker(call)
    if asker.job is not None and asker.job.protocol:
        raise RoostError(UNSUPPORTED, "a protocol agent does not spawn sessions")
    launch = call.args["launch"]
    _check_jailed_spawn(call.session.inside, asker.job, launch.get("cwd"))
    spawn_tree.check_room(call.services.jobs, asker.id, asker.root)
    return call.services.launcher.launch(launch, extra={"parentSession": asker.id, "rootSession": asker.root})


def _check_jailed_spawn(inside, parent, cwd):
    """A jailed job writes its folder only: its child's folder, which the child's jail may
    write, is that folder or one under it (issue 26), resolved (a link in its folder may
    point anywhere). The jail a connection comes from counts, however it became a session
    (a `peer_register` from inside a jail names any folder it likes)."""
    if inside is not None and inside.jailed:
        parent = inside.job
        if parent is None:
            raise RoostError(UNAUTHORIZED, "a process in a jail roost cannot tell spawns no session")
    if parent is None or not parent.record.get("sandboxed"):
        return
    allowed = os.path.realpath(parent.record.get("cwd") or "/")
    real = os.path.realpath(cwd) if isinstance(cwd, str) else None
    if real is None or not (real == allowed or real.startswith(allowed.rstrip("/") + "/")):
        raise RoostError(UNAUTHORIZED, f"a jailed job spawns sessions in its own folder ({allowed}) or under it, "
                                       f"not in {cwd}")


@op("handback", args={
    "state": Choice(HANDBACK_STATES),
    "result": Text(typed="result", default=None), "question": Text(typed="question", default=None),
    "error": Text(typed="error", default=None),
}, result={"routed": Flag("Its parent takes reports and was told.")}, codes=ASKER + (UNSUPPORTED, FULL))
def handback(call):
    asker = _asker(call)
    if asker.job is None:
        raise RoostError(UNSUPPORTED, "handback is a spawned job's: a foreground session has no parent here")
    state = call.args["state"]
    parts = [call.args[name] for name in ("result", "question", "error")]
    text = " ".join(part.strip() for part in parts if part and part.strip())[:HANDBACK_TEXT]
    return {"routed": call.services.messenger.handback(asker, state, text or state)}


@op("peer_ack", args={"ref": Text("The ref of the item it got.", min_length=1)}, result={},
    codes=ASKER + (UNSUPPORTED, NOT_FOUND))
def peer_ack(call):
    asker = _asker(call)
    if asker.job is not None:
        raise RoostError(UNSUPPORTED, "peer_ack is a foreground session's (a job acks with ack)")
    call.services.messenger.foreground_ack(asker, call.args["ref"])
    return {}
