"""roost web against the ops' rows (roost.ops), read from its sources as
tests/test_typescript_contract.py reads the TypeScript client's: every request its Python
makes of the daemon sends an op, action and arguments the rows declare, and what its page
reads of the daemon's answers (a row's fields, a task's, a route's result) is what the
rows say those answers hold."""

import ast
import os
import re

from conftest import ROOT
from roost import ops
from roost.ops import shapes
from roost.web import app, mirror

ops.load()
WEB = os.path.join(ROOT, "roost", "web")
PAGE_SCRIPT = os.path.join(WEB, "static", "app.js")
# The calls that send a request: the daemon client's request/call, the mirror's own.
SENDERS = ("request", "call", "_call")
# Fields a page row holds beyond the daemon's: the machine it runs on (roost.hub.links,
# with several hosts).
NOT_THE_DAEMONS = {"host"}
# The page's routes that pass on an op's answer (roost.web.app): route -> (op, its actions).
ROUTE_ANSWERS = {"reply": ("reply", None), "keys": ("keys", None), "later": ("notify", ("later",)),
                 "task": ("task", app.TASK_ACTIONS)}


def _read(path):
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def _keys_of(node, function):
    """The argument names of a request's `args`: a dict literal, or a name given one in
    the same function (with `name["key"] = ...` after it)."""
    if isinstance(node, ast.Dict):
        return {key.value for key in node.keys if isinstance(key, ast.Constant)}, node
    if isinstance(node, ast.Name) and function is not None:
        keys, literal = set(), None
        for inner in ast.walk(function):
            if not isinstance(inner, ast.Assign):
                continue
            for target in inner.targets:
                if isinstance(target, ast.Name) and target.id == node.id and isinstance(inner.value, ast.Dict):
                    found, literal = _keys_of(inner.value, None)
                    keys |= found
                elif (isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name)
                      and target.value.id == node.id and isinstance(target.slice, ast.Constant)):
                    keys.add(target.slice.value)
        return (keys, literal) if literal is not None else (None, None)
    return None, None


def web_requests(source, path="<planted>"):
    """(where, op, action or None, argument names) for each request with an op named by
    a string: `x.request("op", args)`, `self.mirror.request(link, "op", args)`,
    `self._call(client, "op", args)`. An action that is not a literal is None."""
    tree = ast.parse(source)
    functions = [node for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]
    found = []
    for function in functions:
        for node in ast.walk(function):
            if not isinstance(node, ast.Call):
                continue
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
            if name not in SENDERS:
                continue
            named = [index for index, arg in enumerate(node.args[:2])
                     if isinstance(arg, ast.Constant) and isinstance(arg.value, str)]
            if not named or named[0] + 1 >= len(node.args):
                continue
            keys, literal = _keys_of(node.args[named[0] + 1], function)
            if keys is None:
                continue
            action = None
            for key, value in zip(literal.keys, literal.values):
                if isinstance(key, ast.Constant) and key.value == "action" and isinstance(value, ast.Constant):
                    action = value.value
            found.append((f"{path}:{node.lineno}", node.args[named[0]].value, action, keys))
    return found


def undeclared(op, action, keys, actions=None):
    """The argument names the op's row (each of `actions`, for a variable action) does
    not take: a literal's keys must be taken by every action it may be, each key by one."""
    row = ops.ROWS[op]
    if row.by is None:
        return keys - set(row.args.fields)
    names = [action] if action is not None else list(actions or row.actions)
    fields = [set(row.actions[name].contract.fields) for name in names]
    return {key for key in keys if not any(key in taken for taken in fields)}


def all_web_requests():
    made = []
    for name in sorted(os.listdir(WEB)):
        if name.endswith(".py"):
            made += web_requests(_read(os.path.join(WEB, name)), f"roost/web/{name}")
    return made


def test_every_request_roost_web_makes_is_one_the_rows_declare():
    made = all_web_requests()
    assert {(op, action) for _, op, action, _ in made} >= {
        ("subscribe", None), ("list", None), ("events", None), ("task", "list"), ("screen", None), ("peek", None),
        ("reply", None), ("keys", None), ("notify", "later"), ("task", None)}
    for where, op, action, keys in made:
        assert op in ops.ROWS, (where, op)
        row = ops.ROWS[op]
        if row.by is not None and action is not None:
            assert action in row.actions, (where, op, action)
        variable = app.TASK_ACTIONS if (op, action) == ("task", None) else None
        assert not undeclared(op, action, keys, variable), (where, op, action, undeclared(op, action, keys, variable))


def test_a_planted_undeclared_argument_is_found():
    planted = ('def f(self, client):\n    args = {"id": "x", "text": "y"}\n    args["loudly"] = True\n'
               '    self.mirror.request(link, "reply", args)\n    client.request("notify", {"action": "later", "soon": 1})\n')
    [(_, op, action, keys), (_, later, which, later_keys)] = web_requests(planted)
    assert undeclared(op, action, keys) == {"loudly"}
    assert (later, which, undeclared(later, which, later_keys)) == ("notify", "later", {"soon"})


# -- what the page reads ------------------------------------------------------------

def reads(source, name):
    """The fields the script reads of a variable called `name` (`name.field`)."""
    return set(re.findall(r"(?<![\w.])" + name + r"\.(\w+)", source))


def answer_reads(source):
    """(route, action or None, fields read of its answer) for each `post("route", {...})`:
    `result.x` from there to the next post or the end of the function it is in, and the
    fields a function handed `result` reads (`describeReply(result)`)."""
    readers = {name: reads(body, "result")
               for name, body in re.findall(r"\nfunction (\w+)\(result\) \{(.*?)\n\}", source, re.DOTALL)}
    posts = list(re.finditer(r'post\("(\w+)", (\{[^\n]*)', source))
    found = []
    for index, made in enumerate(posts):
        end = posts[index + 1].start() if index + 1 < len(posts) else len(source)
        function_end = source.find("\n}", made.end())
        segment = source[made.end():min(end, function_end if function_end >= 0 else end)]
        fields = reads(segment, "result")
        for reader in re.findall(r"(\w+)\(result\)", segment):
            fields |= readers.get(reader, set())
        action = re.search(r'action: "([\w-]+)"', made.group(2))
        found.append((made.group(1), action.group(1) if action else None, fields))
    return found


def answered(route, action):
    """The fields the op a route passes on answers."""
    op, actions = ROUTE_ANSWERS[route]
    row = ops.ROWS[op]
    if row.by is None:
        return set(row.result.fields)
    names = [action] if action is not None else list(actions)
    return set().union(*(row.result_for(row.actions[name]).fields for name in names))


def test_a_page_row_holds_only_what_a_jobs_row_declares():
    extra = set(mirror.PAGE_FIELDS) - set(shapes.JOB_ROW.fields) - NOT_THE_DAEMONS
    assert not extra, f"fields roost web sends its pages that no job's row declares: {extra}"


def test_the_page_reads_only_what_its_answers_hold():
    source = _read(PAGE_SCRIPT)
    for name in ("row", "concierge"):
        assert reads(source, name) <= set(mirror.PAGE_FIELDS), (name, reads(source, name) - set(mirror.PAGE_FIELDS))
    assert reads(source, "task") <= set(shapes.BOARD_TASK.fields), reads(source, "task") - set(shapes.BOARD_TASK.fields)
    assert reads(source, "workspace") <= set(shapes.WORKSPACE.fields), \
        reads(source, "workspace") - set(shapes.WORKSPACE.fields)
    seen = set()
    for route, action, fields in answer_reads(source):
        if route == "peek":
            fields -= {"id", "text"}          # roost web's own answer: the lines, masked
        elif route in ROUTE_ANSWERS:
            fields -= answered(route, action)
        seen.add(route)
        assert not fields, (route, action, fields)
    assert {"reply", "later", "task", "keys", "peek"} <= seen


def test_a_planted_read_of_an_undeclared_field_is_found():
    planted = ('\nfunction describe(result) {\n  return result.loudly;\n}\n'
               'async function f() {\n  const result = await post("later", {id: 1, minutes: 60});\n'
               '  show(result.until, result.whenever, describe(result));\n}\n')
    [(route, action, fields)] = answer_reads(planted)
    assert fields - answered(route, action) == {"whenever", "loudly"}
    assert reads("task.title + task.loudly", "task") - set(shapes.BOARD_TASK.fields) == {"loudly"}
