"""The op table: a plain dict from the spec's op name to the function that runs it.

An op is `fn(call) -> result dict` and refuses with RoostError. Modules register their
ops with @op at import; `load()` imports every op module once. Who may call an op is
not here but in roost.callers, checked by the server before the op runs.

`quick=True` marks an op that never waits (no I/O that yields): the server may run it
inline on the reading greenlet, which is what makes pipelined pings fast.
"""

import importlib

OPS = {}
QUICK = set()

_MODULES = ("system", "jobs", "terminal", "agents")


def op(name, quick=False):
    def register(fn):
        if name in OPS:
            raise RuntimeError(f"op {name} registered twice")
        OPS[name] = fn
        if quick:
            QUICK.add(name)
        return fn
    return register


def load(extra=()):
    for module in _MODULES + tuple(extra):
        importlib.import_module(f"{__name__}.{module}")
    return OPS


class Call:
    """One request as an op sees it."""

    __slots__ = ("daemon", "conn", "args", "op")

    def __init__(self, daemon, conn, op_name, args):
        self.daemon = daemon   # roost.daemon.Daemon: the domain objects (jobs, store, ...)
        self.conn = conn       # roost.server.Connection: caller, job_id, send_event()
        self.op = op_name
        self.args = args       # a dict (the server refuses anything else)
