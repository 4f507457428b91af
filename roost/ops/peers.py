"""The agent-to-agent ops (M9, M43, M50): peer_register, peers, send, watch, spawn,
handback, peer_ack, and roost's own speak_for.

A session is a connection that speaks for one: a protocol agent's after its report, a
process roost did not start after `peer_register`, or any process of a job (a terminal
agent's shell tool running `roost send ...`) after `speak_for` with its job's id and
token, which lets it take part without a report, so that job's row is still read from
its screen.
"""

import os

from roost.errors import RoostError
from roost.jobs.launch import fold_name
from roost.ops import args as read
from roost.ops import callers, op
from roost.ops.agents import caller_of, job_for

HANDBACK_STATES = ("done", "blocked", "failed")
HANDBACK_TEXT = 2000


def _asker(call):
    return call.services.directory.of_session(call.session)


@op("speak_for")
def speak_for(call):
    job = job_for(call)
    if not job.speaks:
        raise RoostError("unauthorized", f"job {job.id} has ended: it speaks for no one")
    call.session.identify(caller_of(job), job.id)
    return {"id": job.id, "name": job.name}


@op("peer_register")
def peer_register(call):
    name = fold_name(read.text(call.args, "name", min_length=1, trim=True))
    cwd = read.text(call.args, "cwd", min_length=1)
    if "\0" in cwd or not cwd.startswith("/"):
        # Its project is found from it (the board's actions): a path the OS can take.
        raise RoostError("bad_request", f"cwd must be an absolute path, not {cwd!r}")
    pid = read.integer(call.args, "pid", minimum=1)
    session_file = read.text(call.args, "session", default=None)
    if call.session.caller == callers.SESSION and call.session.job_id:
        raise RoostError("bad_request", "this connection already speaks for a job")
    peer_id = call.services.directory.register(call.session, name, cwd, pid, session_file)
    call.session.identify(callers.SESSION)
    return {"id": peer_id}


@op("peers")
def peers(call):
    return {"peers": call.services.directory.listed(_asker(call))}


@op("send")
def send(call):
    to = read.text(call.args, "to", min_length=1, trim=True)
    message = read.text(call.args, "message", typed="message")
    return call.services.messenger.send(_asker(call), to, message)


@op("watch")
def watch(call):
    target = read.text(call.args, "id", min_length=1, trim=True)
    when = read.choice(call.args, "when", ("idle", "ended"))
    return call.services.watches.add(_asker(call), target, when)


@op("spawn")
def spawn(call):
    """A session's child: its row carries parentSession and rootSession. A protocol
    agent does not spawn: its children would have no panel to show in."""
    asker = _asker(call)
    if asker.job is not None and asker.job.protocol:
        raise RoostError("unsupported", "a protocol agent does not spawn sessions")
    launch = read.mapping(call.args, "launch")
    _check_jailed_spawn(call.session.inside, asker.job, launch.get("cwd"))
    return call.services.launcher.launch(launch, extra={"parentSession": asker.id, "rootSession": asker.root})


def _check_jailed_spawn(inside, parent, cwd):
    """A jailed job writes its folder only: its child's folder, which the child's jail may
    write, is that folder or one under it (issue 26), resolved (a link in its folder may
    point anywhere). The jail a connection comes from counts, however it became a session
    (a `peer_register` from inside a jail names any folder it likes)."""
    if inside is not None and inside.jailed:
        parent = inside.job
        if parent is None:
            raise RoostError("unauthorized", "a process in a jail roost cannot tell spawns no session")
    if parent is None or not parent.record.get("sandboxed"):
        return
    allowed = os.path.realpath(parent.record.get("cwd") or "/")
    real = os.path.realpath(cwd) if isinstance(cwd, str) else None
    if real is None or not (real == allowed or real.startswith(allowed.rstrip("/") + "/")):
        raise RoostError("unauthorized", f"a jailed job spawns sessions in its own folder ({allowed}) or under it, "
                                         f"not in {cwd}")


@op("handback")
def handback(call):
    asker = _asker(call)
    if asker.job is None:
        raise RoostError("unsupported", "handback is a spawned job's: a foreground session has no parent here")
    state = read.choice(call.args, "state", HANDBACK_STATES)
    parts = [read.text(call.args, name, default=None, typed=name) for name in ("result", "question", "error")]
    text = " ".join(part.strip() for part in parts if part and part.strip())[:HANDBACK_TEXT]
    return {"routed": call.services.messenger.handback(asker, state, text or state)}


@op("peer_ack")
def peer_ack(call):
    asker = _asker(call)
    if asker.job is not None:
        raise RoostError("unsupported", "peer_ack is a foreground session's (a job acks with ack)")
    call.services.messenger.foreground_ack(asker, read.text(call.args, "ref", min_length=1))
    return {}
