"""The op table: the spec's op name -> its row (the function that runs it and its
contract), and `run`, the one way in, which checks who may call it, then its arguments.

An op is `fn(call) -> result dict` and refuses with RoostError. Modules register their
ops with @op at import; `load()` imports every op module once. Who may call an op is the
table in roost.ops.callers; an op without a row there is refused to every caller.

An op's row says what it takes, what it answers and how it may refuse, as data
(roost.contract): `args` (a dict of fields, or a Shape), `result`, `codes` (those its
body and what it calls may raise; the callers' codes and bad_request for a contract with
fields are added). `run` checks the arguments against `args` before the op runs and the
op reads the checked values from `call.args`: every declared field is there (its default
when absent, LEFT_OUT fields aside), of its type, and nothing else. An op with actions
(`task {action}`) has a contract per action (`by` names the field that picks it:
@action, or `actions` in its row). docs/protocol.md is generated from these rows.

`quick=True` marks an op that never waits (no I/O that yields): the server may run it
inline on the reading greenlet, which is what makes pipelined pings fast.

With ROOST_CHECK_CONTRACTS=1 in its environment (the test suite sets it) the daemon
also checks each answer against the row: a result with a field the row does not declare,
or of another type, and a refusal with a code it does not declare, are logged with a
traceback and answered `internal`. Set to a file's path instead, it appends each op's
outcome and any such problem there as JSON lines, and answers as usual (a survey of
what a run of the suite exercised).
"""

import importlib
import json
import os

from roost import codec
from roost.contract import NO_ARGS, Choice, Shape
from roost.errors import BAD_REQUEST, INTERNAL, UNSUPPORTED, RoostError, bad_request
from roost.ops import callers

OPS = {}
ROWS = {}
QUICK = set()

_MODULES = ("system", "jobs", "terminal", "agents", "feed", "peers", "board", "workspaces", "profiles", "schedules",
            "concierge", "notify", "timeline", "limits", "screens", "spend")


class Row:
    """One op of the table. `args`, `result`: Shapes, or None for an op whose contract is
    not written yet (its arguments reach it unchecked)."""

    def __init__(self, name, fn, args, result, codes, by=None, doc=None):
        self.name = name
        self.fn = fn
        self.args = _shape(args)
        self.result = _shape(result)
        self.codes = frozenset(codes)
        self.by = by                  # the field that names the action, for an op with actions
        self.actions = {}             # action -> Action
        self.doc = doc

    @property
    def callers(self):
        """Who may call it: {caller: the code it is refused with}, its row of the callers'
        table (roost.ops.callers REFUSED), which stays there: the CLI reads it without
        loading the ops."""
        return callers.REFUSED.get(self.name)

    def action_of(self, args):
        """The Action `args` names; bad_request for one this op does not have."""
        action = args.get(self.by)
        found = self.actions.get(action) if isinstance(action, str) else None
        if found is None:
            if action is not None and not isinstance(action, str):
                raise bad_request(f"{self.by} must be a string")
            if isinstance(action, str) and self.name in callers.ACTIONS and action in callers.ACTIONS[self.name]:
                raise RoostError(UNSUPPORTED, f"this roost does not offer {self.name} {action} yet")
            raise bad_request(f"{self.by} must be one of {', '.join(self.actions)}"
                              if action is not None else f"{self.by} is required")
        return found

    def codes_for(self, action=None):
        """Every code this op (that action of it) may answer."""
        codes = set(self.codes) | {INTERNAL}
        rules = [callers.REFUSED.get(self.name) or {}]
        if action is not None:
            codes |= action.codes
            rules.append(callers.ACTIONS.get(self.name, {}).get(action.name) or {})
        for rule in rules:
            codes |= {code for caller in callers.EVERYONE for code in [callers.refusal(rule, caller)] if code}
        if self.actions or (self.args is not None and self.args.fields):
            codes.add(BAD_REQUEST)
        if self.name in callers.ACTIONS:
            codes.add(BAD_REQUEST)     # the callers' check of the action
        return codes

    def result_for(self, action=None):
        if action is not None and action.result is not None:
            return action.result
        return self.result


class Action:
    """One action of an op with actions: its own arguments (the field that names it
    besides), result (else the op's) and codes (besides the op's)."""

    def __init__(self, args=None, result=None, codes=(), fn=None, doc=None):
        self.name = None
        self.op = None
        self.args = _shape(args) or NO_ARGS
        self.result = _shape(result)
        self.codes = frozenset(codes)
        self.fn = fn
        self.doc = doc
        self.contract = None          # args with the field that names it, made on registration

    @property
    def callers(self):
        """Its own rule after its op's (roost.ops.callers ACTIONS), or None."""
        return callers.ACTIONS.get(self.op, {}).get(self.name)


def _shape(fields):
    if fields is None or isinstance(fields, Shape):
        return fields
    return Shape(fields)


def op(name, quick=False, args=None, result=None, codes=(), by=None, actions=None, doc=None):
    def register(fn):
        if name in OPS:
            raise RuntimeError(f"op {name} registered twice")
        OPS[name] = fn
        row = ROWS[name] = Row(name, fn, args, result, codes, by, doc)
        for action_name, action in (actions or {}).items():
            _add_action(row, action_name, action)
        for action_name, action in _EARLY.pop(name, []):
            _add_action(row, action_name, action)
        if quick:
            QUICK.add(name)
        return fn
    return register


# Actions registered before their op (a module of its actions imported first).
_EARLY = {}


def action(op_name, name, args=None, result=None, codes=(), doc=None):
    """Registers the decorated `fn(call, ...)` as action `name` of op `op_name`."""
    def register(fn):
        found = Action(args, result, codes, fn, doc)
        if op_name in ROWS:
            _add_action(ROWS[op_name], name, found)
        else:
            _EARLY.setdefault(op_name, []).append((name, found))
        return fn
    return register


def _add_action(row, name, found):
    if name in row.actions:
        raise RuntimeError(f"{row.name} {name} registered twice")
    found.name = name
    found.op = row.name
    found.contract = Shape(dict({row.by: Choice((name,))}, **found.args.fields))
    row.actions[name] = found


def load(extra=()):
    global CHECKING
    for module in _MODULES + tuple(extra):
        importlib.import_module(f"{__name__}.{module}")
    CHECKING = os.environ.get("ROOST_CHECK_CONTRACTS") or None
    return OPS


CHECKING = None     # "1", or the path of a survey (see the docstring)


def run(services, session, op_name, args, loose=False):
    """Run one request: the caller's check, the arguments' check, then the op. An op the
    spec names that this daemon does not offer is refused as the spec refuses its caller,
    else unsupported. `loose`: the request holds a value the codec could not take (a
    number past 64 bits, a lone surrogate, ...), refused once the contract's check of the
    arguments has had its say, naming the field."""
    row = ROWS.get(op_name)
    if row is None and op_name not in callers.REFUSED:
        raise bad_request(f"unknown op: {op_name}")
    if not callers.allowed(op_name, session.caller):
        inside = session.inside.describe() if session.inside is not None else None
        callers.check(op_name, session.caller, args, inside)
    if row is None:
        raise RoostError(UNSUPPORTED, f"this roost does not offer {op_name} yet")
    action = None
    given = args
    if row.by is not None:
        action = row.action_of(args)
        args = action.contract.check_fields(args)
    elif row.args is not None:
        args = row.args.check_fields(args) if row.args.fields else {}
    if loose:
        _refuse_what_cannot_be_held(given)
    call = Call(services, session, op_name, args, action)
    if not CHECKING or (row.args is None and row.by is None):
        # An op without a contract yet: tests/test_contracts.py names it.
        return row.fn(call)
    return _checked(row, action, call)


def _refuse_what_cannot_be_held(args):
    for name, value in args.items():
        problem = codec.unholdable(value)
        if problem:
            raise bad_request(f"{name}: {problem}")


class ContractBroken(Exception):
    """An answer its op's row does not declare (ROOST_CHECK_CONTRACTS=1)."""


def _checked(row, action, call):
    where = row.name + (f" {action.name}" if action is not None else "")
    try:
        result = row.fn(call)
    except RoostError as error:
        _survey(where, error.code)
        if error.code not in row.codes_for(action):
            _broken(where, f"refused with {error.code!r}, which its row does not declare: {error.text}", error)
        raise
    shape = row.result_for(action)
    problems = shape.problems(result, "result") if shape is not None else []
    _survey(where, "ok")
    if problems:
        _broken(where, "answered outside its row: " + "; ".join(problems[:5]))
    return result


def _broken(where, what, cause=None):
    if CHECKING == "1":
        raise ContractBroken(f"{where} {what}") from cause
    _survey(where, "broken", what)


def _survey(where, outcome, problem=None):
    if CHECKING == "1":
        return
    entry = {"op": where, "outcome": outcome}
    if problem:
        entry["problem"] = problem
    with open(CHECKING, "a", encoding="utf-8") as survey:
        survey.write(json.dumps(entry) + "\n")


class Call:
    """One request as an op sees it."""

    __slots__ = ("services", "session", "args", "op", "action")

    def __init__(self, services, session, op_name, args, action=None):
        self.services = services   # roost.daemon.services.Services: the daemon's parts
        self.session = session     # roost.ops.session.Session: who asks, and what it holds
        self.op = op_name
        self.args = args           # the checked arguments (raw, for an op without a contract)
        self.action = action       # the Action of an op with actions
