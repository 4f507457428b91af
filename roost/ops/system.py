"""The daemon's own ops: ping, status, hello, shutdown."""

import os

from roost import PROTOCOL_VERSION, __version__, store
from roost.ops import args as read
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


@op("ping", quick=True)
def ping(call):
    return {"pid": _pid, "version": __version__}


@op("status", quick=True)
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


@op("hello", quick=True)
def hello(call):
    version = read.integer(call.args, "protocol", default=1, minimum=1)
    agent = call.args.get("agent")
    named = call.args.get("capabilities")
    capabilities = []
    if isinstance(named, list):
        # Unknown capabilities and what is not a string are ignored (HelloArgs).
        capabilities = [item for item in named if isinstance(item, str) and item in AGENT_CAPABILITIES]
    session = call.session
    if session.caller in (callers.PERSON, callers.IN_JOB):
        session.identify(callers.UNREGISTERED)
    session.hello = {
        "protocol": version,
        "agent": agent if isinstance(agent, dict) else None,
        "capabilities": capabilities,
    }
    return {
        "protocol": min(version, PROTOCOL_VERSION),
        "daemon": {"name": "roost", "version": __version__},
        "capabilities": list(DAEMON_CAPABILITIES),
    }


@op("shutdown")
def shutdown(call):
    keep = read.flag(call.args, "keepWorkers")
    # The daemon's main greenlet leaves once this answer has gone out.
    call.services.shutdown.request(keep)
    return {}
