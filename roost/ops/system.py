"""The daemon's own ops: ping, status, hello, shutdown."""

import os

from roost import PROTOCOL_VERSION, __version__, store
from roost.contract import Choice, Flag, Integer, ListOf, Number, Shape, Text
from roost.ops import callers, op

# hello's answer: the daemon's capabilities, in the spec's order.
DAEMON_CAPABILITIES = ("replies", "steer", "agent-items", "peers", "spawn", "handback",
                       "events", "watch", "tasks", "workspaces")
AGENT_CAPABILITIES = ("report", "replies", "steer", "usage", "context", "model-switch",
                      "transcript", "peers", "agent-items")


# The daemon's pid, asked of the kernel once (a ping asked it every time: one system
# call in three of a ping's); a fork's child asks again.
_pid = os.getpid()


def _forgot_pid():
    global _pid
    _pid = os.getpid()


os.register_at_fork(after_in_child=_forgot_pid)


@op("ping", quick=True, args={}, result={"pid": Integer(), "version": Text()})
def ping(call):
    return {"pid": _pid, "version": __version__}


DAEMON_STATUS = Shape({
    "pid": Integer(), "version": Text(), "socketDir": Text(), "liveJobs": Integer(), "totalJobs": Integer(),
    "ptyError": Text("Why no job can start now (the keeper is out of reach), or null.", nullable=True),
    "startedAt": Number(), "home": Text("roost's own: the daemon's home."),
    "corruptFiles": ListOf(Text(), "roost's own: state files it could not read and set aside."),
}, name="DaemonStatus")


@op("status", quick=True, args={}, result=DAEMON_STATUS)
def status(call):
    services = call.services
    counts = services.jobs.counts()
    return {
        "pid": _pid,
        "version": __version__,
        "socketDir": os.path.dirname(services.socket_path),
        "liveJobs": counts["live"],
        "totalJobs": counts["total"],
        "ptyError": services.runner.pty_error,
        "startedAt": services.started_at,
        "home": services.home,
        "corruptFiles": list(store.corrupt_files),
    }


HELLO_ARGS = Shape({
    "protocol": Integer("The highest protocol version the agent speaks.", minimum=1, default=1),
    "agent": Shape({"name": Text(), "version": Text(default=None)}, prefix="agent.", open=True, default=None),
    "capabilities": ListOf(Text(), "What the agent can do; unknown ones are ignored (and what is not a string).",
                           drop_others=True, default=[]),
}, name="HelloArgs", doc="M31: an agent says which protocol and capabilities it has, before it reports.")
HELLO_RESULT = Shape({
    "protocol": Integer(),
    "daemon": Shape({"name": Choice(("roost",)), "version": Text()}),
    "capabilities": ListOf(Choice(DAEMON_CAPABILITIES), "What the daemon offers agents."),
}, name="HelloResult")


@op("hello", quick=True, args=HELLO_ARGS, result=HELLO_RESULT)
def hello(call):
    version = call.args["protocol"]
    agent = call.args["agent"]
    # Unknown capabilities are ignored (HelloArgs).
    capabilities = [item for item in call.args["capabilities"] if item in AGENT_CAPABILITIES]
    session = call.session
    if session.caller in (callers.PERSON, callers.IN_JOB):
        session.identify(callers.UNREGISTERED)
    session.hello = {
        "protocol": version,
        "agent": agent,
        "capabilities": capabilities,
    }
    return {
        "protocol": min(version, PROTOCOL_VERSION),
        "daemon": {"name": "roost", "version": __version__},
        "capabilities": list(DAEMON_CAPABILITIES),
    }


@op("shutdown", args={"keepWorkers": Flag("Leave the jobs running (the keeper holds them).", default=False)},
    result={})
def shutdown(call):
    keep = call.args["keepWorkers"]
    # The daemon's main greenlet leaves once this answer has gone out.
    call.services.shutdown.request(keep)
    return {}
