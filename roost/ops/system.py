"""The daemon's own ops: ping, status, hello, shutdown."""

import os

import gevent

from roost import PROTOCOL_VERSION, __version__
from roost.ops import callers
from roost import store
from roost.ops import args as read
from roost.ops import op

# hello's answer: the daemon's capabilities, in the spec's order.
DAEMON_CAPABILITIES = ("replies", "steer", "agent-items", "peers", "spawn", "handback",
                       "events", "watch", "tasks", "workspaces")
AGENT_CAPABILITIES = ("report", "replies", "steer", "usage", "context", "model-switch",
                      "transcript", "peers", "agent-items")


@op("ping", quick=True)
def ping(call):
    return {"pid": os.getpid(), "version": __version__}


@op("status", quick=True)
def status(call):
    daemon = call.daemon
    counts = daemon.jobs.counts()
    return {
        "pid": os.getpid(),
        "version": __version__,
        "socketDir": os.path.dirname(daemon.socket_path),
        "liveJobs": counts["live"],
        "totalJobs": counts["total"],
        "ptyError": daemon.pty_error,
        "startedAt": daemon.started_at,
        "home": daemon.home,
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
    conn = call.conn
    if conn.caller == callers.PERSON:
        conn.identify(callers.UNREGISTERED)
    conn.hello = {
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
    # Answer first; the daemon stops once this answer has left (spawned after it).
    gevent.spawn(call.daemon.stop, keep)
    return {}
