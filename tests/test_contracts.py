"""Each op's contract in its row (roost.ops): every op has one; the arguments are checked
against it before the op runs (a wrong type to any field of any op is bad_request naming
the field, sent over the socket and through ops.run); the codes an op raises are ones it
declares, of the closed set; and its answers are what its row says (here for every op
once, and in every test: tests run each daemon with ROOST_CHECK_CONTRACTS=1)."""

import ast
import inspect
import json
import os
import socket
import textwrap

import pytest

from conftest import ROOT, DaemonProcess, wait_for
from jobkit import job_token
from roost import errors, ops
from roost.contract import Anything, Choice, Flag, Integer, ListOf, MapOf, Number, Shape, Text
from roost.errors import RoostError, bad_request
from roost.ops import callers
from roost.ops.session import Session

ops.load()
# Where a new op's contract goes, for a failure to point at.
HOW = "see docs/architecture.md, \"A new op\""


def contracts():
    """(op, action or None, the shape its arguments are checked with) for every op and action."""
    for name, row in sorted(ops.ROWS.items()):
        if row.by is not None:
            for action_name, action in row.actions.items():
                yield name, action_name, action.contract
        else:
            yield name, None, row.args


def test_every_op_has_a_contract():
    missing = [name for name, row in ops.ROWS.items()
               if (row.args is None and row.by is None) or (row.result is None and not all(
                   action.result is not None for action in row.actions.values()))]
    assert missing == [], f"ops whose row declares no arguments or no result ({HOW}): {missing}"
    for name, actions in callers.ACTIONS.items():
        assert sorted(actions) == sorted(ops.ROWS[name].actions), f"{name}: each action needs its row ({HOW})"


def test_a_jobs_row_declares_every_field_a_record_shows():
    from roost.jobs import record
    from roost.ops import shapes

    # A new field of the row (roost.jobs.record) is declared in JobRow (roost/ops/shapes.py).
    assert set(shapes.JOB_ROW.fields) == set(record.ROW_FIELDS)


# -- values of each type ------------------------------------------------------------

def sample(field):
    """A value `field` takes."""
    if isinstance(field, Choice):
        return field.options[0]
    if isinstance(field, Text):
        return "x" * max(field.min_length, 1)
    if isinstance(field, Flag):
        return True
    if isinstance(field, (Integer, Number)):
        return field.minimum if field.minimum is not None else 1
    if isinstance(field, ListOf):
        return []
    if isinstance(field, Shape):
        return {name: sample(inner) for name, inner in field.fields.items() if inner.required}
    return {}


def wrong(field):
    """A value of another type than `field`'s, or None when it takes any value."""
    if field.lenient or (isinstance(field, Anything) and not field.object):
        return None
    if isinstance(field, Text):
        return 12345
    if isinstance(field, Flag):
        return "yes"
    if isinstance(field, (Integer, Number)):
        return "many"
    return "x"


def valid_args(shape):
    return {name: sample(field) for name, field in shape.fields.items() if field.required}


def wrongs(shape):
    """(field, args with that field of a wrong type and every other required one right)."""
    for name, field in shape.fields.items():
        value = wrong(field)
        if value is not None:
            yield name, dict(valid_args(shape), **{name: value})


def caller_for(name, action):
    """A caller that may call `name` (with `action`), or None."""
    for caller in (callers.PERSON, callers.SESSION, callers.CONCIERGE):
        rules = [callers.REFUSED.get(name, {})] + ([callers.ACTIONS[name][action]] if name in callers.ACTIONS else [])
        if all(callers.refusal(rule, caller) is None for rule in rules):
            return caller
    return None


class NoOutlet:
    closed = False
    unsent = 0


def session_of(caller):
    session = Session(NoOutlet())
    session.identify(caller)
    return session


def test_a_wrong_type_to_any_field_of_any_op_is_bad_request_naming_it():
    tried = 0
    for name, action, shape in contracts():
        caller = caller_for(name, action)
        assert caller is not None, (name, action)
        for field, args in wrongs(shape):
            with pytest.raises(RoostError) as caught:
                ops.run(None, session_of(caller), name, args)      # refused before the op runs
            assert caught.value.code == "bad_request", (name, action, field, caught.value)
            assert field in caught.value.text, (name, action, field, caught.value.text)
            tried += 1
    assert tried > 150


def test_a_missing_required_field_is_bad_request_naming_it():
    for name, action, shape in contracts():
        for field_name, field in shape.fields.items():
            if not field.required or field_name == (ops.ROWS[name].by or ""):
                continue
            args = valid_args(shape)
            del args[field_name]
            with pytest.raises(RoostError) as caught:
                ops.run(None, session_of(caller_for(name, action)), name, args)
            assert caught.value.code == "bad_request" and f"{field_name} is required" in caught.value.text, \
                (name, action, field_name, caught.value)


def test_the_op_receives_the_checked_values():
    got = []
    shape = Shape({"n": Integer(minimum=1), "word": Text(trim=True), "many": Flag(default=False)})
    row = ops.Row("planted", lambda call: got.append(call) or {}, shape, Shape({}), ())
    ops.ROWS["planted"] = row
    callers.REFUSED["planted"] = {}
    try:
        ops.run(None, session_of(callers.PERSON), "planted", {"n": 3.0, "word": " hi ", "extra": [1]})
    finally:
        del ops.ROWS["planted"], callers.REFUSED["planted"]
    assert got[0].args == {"n": 3, "word": "hi", "many": False}


def test_roost_mcps_tools_send_what_the_rows_take():
    from roost.mcp_server import tools

    samples = {"string": "x", "integer": 1}
    for tool in tools.SESSION_TOOLS + tools.CONCIERGE_TOOLS:
        given = {name: samples[spec["type"]] if "enum" not in spec else spec["enum"][0]
                 for name, spec in tool.schema.get("properties", {}).items()}
        sent = tool.args(given)
        row = ops.ROWS[tool.op]
        shape = row.actions[sent[row.by]].contract if row.by else row.args
        assert set(sent) <= set(shape.fields), (tool.name, set(sent) - set(shape.fields))
        shape.check_fields(sent)        # and the row takes them


def python_client_requests(source):
    """(op, action, argument names) for each request roost_agent.py makes:
    `x.request("op", args)` and `_Request("op", args, ...)`, `args` a dict literal, a name
    given one in the same function (and `args["key"] = ...` after), or a method's call
    whose function builds and returns one."""
    tree = ast.parse(source)
    functions = {node.name: node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)}

    def keys_of(node, function):
        if isinstance(node, ast.Dict):
            return {key.value for key in node.keys if isinstance(key, ast.Constant)}
        if isinstance(node, ast.Name):
            found = set()
            for inner in ast.walk(function):
                if isinstance(inner, ast.Assign) and any(isinstance(target, ast.Name) and target.id == node.id
                                                         for target in inner.targets):
                    found |= keys_of(inner.value, function)
                if isinstance(inner, ast.Assign) and any(
                        isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name)
                        and target.value.id == node.id and isinstance(target.slice, ast.Constant)
                        for target in inner.targets):
                    found.add(inner.targets[0].slice.value)
            return found
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in functions:
            called = functions[node.func.attr]
            returned = [inner.value for inner in ast.walk(called) if isinstance(inner, ast.Return)]
            return set().union(*(keys_of(value, called) for value in returned if value is not None))
        return None

    found = []
    for function in [node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)]:
        for node in ast.walk(function):
            if not isinstance(node, ast.Call) or not node.args or not isinstance(node.args[0], ast.Constant):
                continue
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
            if name not in ("request", "_Request") or not isinstance(node.args[0].value, str):
                continue
            keys = keys_of(node.args[1], function) if len(node.args) > 1 else set()
            if keys is None:
                continue        # passed on from its own caller (request's own body)
            action = None
            if isinstance(node.args[1] if len(node.args) > 1 else None, (ast.Dict, ast.Name)):
                for inner in ast.walk(function):
                    if isinstance(inner, ast.Dict):
                        for key, value in zip(inner.keys, inner.values):
                            if isinstance(key, ast.Constant) and key.value == "action":
                                action = value.value
            found.append((node.args[0].value, action, keys))
    return found


def test_roost_agent_py_sends_what_the_rows_take():
    with open(os.path.join(ROOT, "roost_agent.py"), encoding="utf-8") as handle:
        made = python_client_requests(handle.read())
    assert {(op, action) for op, action, _ in made} >= {
        ("hello", None), ("report", None), ("ack", None), ("peers", None), ("send", None), ("watch", None),
        ("peer_register", None), ("peer_ack", None), ("task", "list"), ("task", "claim"), ("task", "done"),
        ("task", "release"), ("task", "add")}
    for op, action, keys in made:
        row = ops.ROWS[op]
        fields = row.actions[action].contract.fields if row.by else row.args.fields
        assert keys <= set(fields), (op, action, keys - set(fields))
    planted = 'def f(self):\n    args = {"action": "claim", "id": 1}\n    args["loud"] = 1\n' \
              '    self.request("task", args)\n'
    [(op, action, keys)] = python_client_requests(planted)
    assert keys - set(ops.ROWS[op].actions[action].contract.fields) == {"loud"}


# -- codes ------------------------------------------------------------------------

def test_every_declared_code_is_of_the_closed_set():
    for name, row in ops.ROWS.items():
        for action in [None] + list(row.actions.values()):
            assert row.codes_for(action) <= set(errors.CODES), (name, action and action.name)


HELPERS = {"bad_request": errors.BAD_REQUEST, "not_found": errors.NOT_FOUND}


def raised_codes(fn, seen=None):
    """The codes `fn`'s own source raises (RoostError(CODE), bad_request(...)), and those
    of the functions of roost.ops it calls by name, followed down."""
    seen = set() if seen is None else seen
    if fn in seen:
        return set()
    seen.add(fn)
    names = fn.__globals__       # its module's names, whoever imported that module how
    codes = set()
    for node in ast.walk(ast.parse(textwrap.dedent(inspect.getsource(fn)))):
        if not isinstance(node, ast.Call):
            continue
        called = node.func.id if isinstance(node.func, ast.Name) else None
        if called in HELPERS:
            codes.add(HELPERS[called])
        elif called == "RoostError" and node.args and isinstance(node.args[0], (ast.Name, ast.Attribute)):
            first = node.args[0]
            codes.add(getattr(errors, first.id if isinstance(first, ast.Name) else first.attr))
        elif called and inspect.isfunction(names.get(called)):
            inner = names[called]
            if inner.__module__.startswith("roost.ops") or inner.__globals__ is names:
                codes |= raised_codes(inner, seen)
    return codes


def test_the_codes_an_ops_own_code_raises_are_ones_it_declares():
    for name, row in ops.ROWS.items():
        own = raised_codes(row.fn)
        if row.by is None:
            assert own <= row.codes_for(), (name, own - row.codes_for())
            continue
        for action in row.actions.values():
            found = own | (raised_codes(action.fn) if action.fn else set())
            assert found <= row.codes_for(action), (name, action.name, found - row.codes_for(action))


def test_the_static_reading_of_codes_finds_a_planted_one():
    def planted(call):
        _helper(call)

    assert raised_codes(planted) >= {errors.CONFLICT, errors.BAD_REQUEST}


def _helper(call):
    if call:
        raise RoostError(errors.CONFLICT, "x")
    raise bad_request("y")


# -- over the socket --------------------------------------------------------------

def raw(daemon):
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(30)
    sock.connect(daemon.socket)
    return sock, sock.makefile("rb")


def ask(connection, op, args):
    sock, reader = connection
    sock.sendall(json.dumps({"id": op, "op": op, "args": args}).encode() + b"\n")
    answer = json.loads(reader.readline())
    assert answer["id"] == op
    return answer


def token_of(daemon, job_id):
    return job_token(daemon.home, job_id)


def test_a_wrong_typed_argument_sent_to_every_op_is_bad_request_naming_it(daemon):
    person = raw(daemon)
    session = raw(daemon)
    assert ask(session, "peer_register", {"name": "fg", "cwd": "/tmp", "pid": os.getpid()})["ok"]
    on = ask(person, "concierge", {"action": "on", "launch": {
        "kind": "shell", "cwd": "/tmp", "command": ["sleep", "300"], "env": {}, "name": "", "sessionFile": "",
        "origin": "dispatch"}})
    assert on["ok"], on
    concierge = raw(daemon)
    job_id = on["result"]["id"]
    assert ask(concierge, "speak_for", {"id": job_id, "token": token_of(daemon, job_id)})["ok"]
    connections = {callers.PERSON: person, callers.SESSION: session, callers.CONCIERGE: concierge}
    sent = set()
    for name, action, shape in contracts():
        first = next(wrongs(shape), None)
        if first is None:
            assert not [field for field in shape.fields if field != ops.ROWS[name].by], (name, action)
            continue
        field, args = first
        answer = ask(connections[caller_for(name, action)], name, args)
        assert not answer["ok"] and answer["code"] == "bad_request" and field in answer["error"], \
            (name, action, field, answer)
        sent.add(name)
    assert sent == {name for name, row in ops.ROWS.items() if row.by or row.args.fields}
    for connection in connections.values():
        connection[0].close()


# -- the answers --------------------------------------------------------------------

PLANTED = ("import sys\n"
           "from roost import ops\n"
           "from roost.contract import Text\n"
           "from roost.errors import BUSY, RoostError\n"
           "from roost.ops import callers, op\n"
           "callers.REFUSED['planted'] = {}\n"
           "@op('planted', args={'how': Text()}, result={'said': Text()})\n"
           "def planted(call):\n"
           "    if call.args['how'] == 'refuse':\n"
           "        raise RoostError(BUSY, 'not declared')\n"
           "    return {'said': 'x'} if call.args['how'] == 'right' else {'said': 1, 'other': 2}\n"
           "from roost.__main__ import run\n"
           "sys.argv = ['roost', 'daemon', '--foreground']\n"
           "sys.exit(run())\n")


class PlantedOpDaemon(DaemonProcess):
    """A real daemon with one op more, whose answers stray from its row."""

    code = PLANTED


def test_an_answer_outside_its_row_is_caught_where_it_is_made(home):
    daemon = PlantedOpDaemon(home).start()
    try:
        with daemon.client() as client:
            assert client.call("planted", {"how": "right"}) == {"said": "x"}
            strayed = client.request("planted", {"how": "stray"})
            refused = client.request("planted", {"how": "refuse"})
        assert strayed["code"] == "internal" and refused["code"] == "internal"
        log = wait_for(lambda: (lambda text: text if "not declared" in text else None)(
            open(os.path.join(home, "daemon.log"), encoding="utf-8").read()), what="the daemon's log")
        assert "planted answered outside its row: result.said is not string: 1; result.other is not in its " \
               "contract" in log
        assert "planted refused with 'busy', which its row does not declare" in log
    finally:
        daemon.stop()
