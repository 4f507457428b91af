"""The op table: a plain dict from the spec's op name to the function that runs it, and
`run`, the one way in, which checks who may call it first.

An op is `fn(call) -> result dict` and refuses with RoostError. Modules register their
ops with @op at import; `load()` imports every op module once. Who may call an op is the
table in roost.ops.callers; an op without a row there is refused to every caller.

`quick=True` marks an op that never waits (no I/O that yields): the server may run it
inline on the reading greenlet, which is what makes pipelined pings fast.
"""

import importlib

from roost.errors import RoostError, bad_request
from roost.ops import callers

OPS = {}
QUICK = set()

_MODULES = ("system", "jobs", "terminal", "agents", "feed", "peers", "board", "workspaces", "profiles", "schedules",
            "concierge", "notify", "timeline", "limits", "spend")


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


def run(services, session, op_name, args):
    """Run one request: the caller's check, then the op. An op the spec names that this
    daemon does not offer is refused as the spec refuses its caller, else unsupported."""
    fn = OPS.get(op_name)
    if fn is None and op_name not in callers.REFUSED:
        raise bad_request(f"unknown op: {op_name}")
    if not callers.allowed(op_name, session.caller):
        inside = session.inside.describe() if session.inside is not None else None
        callers.check(op_name, session.caller, args, inside)
    if fn is None:
        raise RoostError("unsupported", f"this roost does not offer {op_name} yet")
    return fn(Call(services, session, op_name, args))


class Call:
    """One request as an op sees it."""

    __slots__ = ("services", "session", "args", "op")

    def __init__(self, services, session, op_name, args):
        self.services = services   # roost.daemon.services.Services: the daemon's parts
        self.session = session     # roost.ops.session.Session: who asks, and what it holds
        self.op = op_name
        self.args = args           # a dict (the server refuses anything else)
