"""The TypeScript client (clients/typescript/) checked against the ops' rows (roost.ops):
the shapes it declares hold what the daemon takes and sends (WorkerReport, ContextInfo,
HelloResult, the states, statuses and modes), and every op, action and argument it
sends is one the daemon's rows declare. Read from the source, no compiler run."""

import os
import re

from conftest import ROOT
from roost import ops
from roost.contract import Anything, Choice, Flag, Integer, ListOf, MapOf, Number, Shape, Text
from roost.ops import agents, shapes, system

ops.load()
PACKAGE = os.path.join(ROOT, "clients", "typescript")
CLIENT = os.path.join(PACKAGE, "src", "roost-agent.ts")
TOOLS = os.path.join(PACKAGE, "pi", "tools.ts")
# WorkerReport fields pi's worker sends that the daemon ignores (the spec lists them; roost
# reads none of them): unknown fields are ignored on both sides.
IGNORED_BY_THE_DAEMON = {"attachSignal", "attachRepaint", "remoteAt", "prLinks"}


def read(path):
    with open(path, encoding="utf-8") as handle:
        return re.sub(r"/\*.*?\*/", "", handle.read(), flags=re.DOTALL)


def interfaces(source):
    """name -> {field: (type text, optional)} for each `export interface`."""
    found = {}
    for name, body in re.findall(r"export interface (\w+) \{(.*?)\n\}", source, re.DOTALL):
        fields = {}
        for field, optional, kind in re.findall(r"^\s+(\w+)(\??): (.+?);\s*(?://.*)?$", body, re.MULTILINE):
            fields[field] = (kind, bool(optional))
        found[name] = fields
    return found


def aliases(source):
    return dict(re.findall(r"export type (\w+) = (.+?);", source))


DECLARED_NAMES = {"JsonObject"}


def atoms(kind, names):
    """The values a TypeScript type takes, as a set of atoms: "null", "string",
    "number", "boolean", "object", a quoted literal, or "T[]" of T's atoms."""
    kind = kind.strip()
    if kind.startswith("(") and kind.endswith(")"):
        kind = kind[1:-1]
    parts = [part.strip() for part in re.split(r"\|(?![^{]*\})", kind)]
    found = set()
    for part in parts:
        if part in names:
            found |= atoms(names[part], names)
        elif part.endswith("[]"):
            found.add("array:" + ",".join(sorted(atoms(part[:-2], names))))
        elif part.startswith("{") or part in DECLARED_NAMES or part.startswith("Record<"):
            found.add("object")
        else:
            found.add(part)
    return found


def contract_atoms(field):
    """The same for a contract's field: what the daemon takes there (an absent field's
    null included), or what it sends."""
    found = {"null"} if field.nullable or not field.required else set()
    if isinstance(field, Choice):
        found |= {f'"{option}"' for option in field.options}
    elif isinstance(field, Text):
        found.add("string")
    elif isinstance(field, Flag):
        found.add("boolean")
    elif isinstance(field, (Integer, Number)):
        found.add("number")
    elif isinstance(field, ListOf):
        found.add("array:" + ",".join(sorted(contract_atoms(field.item) - {"null"})))
    elif isinstance(field, (Shape, MapOf)) or (isinstance(field, Anything) and field.object):
        found.add("object")
    else:
        found |= {"string", "number", "boolean", "object", "null"}
    return found


def within(narrow, wide):
    """Every value of `narrow` is one of `wide` (a literal is a string)."""
    def taken(atom):
        if atom in wide:
            return True
        if atom.startswith('"'):
            return "string" in wide
        if atom.startswith("array:"):
            inner = set(atom[6:].split(",")) - {""}
            return any(other.startswith("array:") and within(inner, set(other[6:].split(",")) - {""})
                       for other in wide)
        return False
    return all(taken(atom) for atom in narrow)


SOURCE = read(CLIENT)
DECLARED = interfaces(SOURCE)
DECLARED_NAMES |= set(DECLARED)
NAMES = aliases(SOURCE)


def test_what_the_client_reports_is_what_the_daemon_takes():
    report = DECLARED["WorkerReport"]
    for name, field in agents.WORKER_REPORT.fields.items():
        assert name in report, f"WorkerReport.{name} is in the daemon's contract, not in the client's interface"
        sent = atoms(report[name][0], NAMES)
        assert within(sent, contract_atoms(field)), (name, sent, contract_atoms(field))
    assert set(report) - set(agents.WORKER_REPORT.fields) == IGNORED_BY_THE_DAEMON


def test_what_the_daemon_answers_is_what_the_client_expects():
    for interface, shape in (("HelloResult", system.HELLO_RESULT), ("ContextInfo", shapes.CONTEXT_INFO)):
        declared = DECLARED[interface]
        assert set(declared) == set(shape.fields), interface
        for name, field in shape.fields.items():
            assert within(contract_atoms(field), atoms(declared[name][0], NAMES)), (interface, name)


def test_the_states_statuses_and_modes_are_the_daemons():
    assert atoms("State", NAMES) == {f'"{state}"' for state in agents.STATES}
    assert atoms("Status", NAMES) == {f'"{status}"' for status in agents.STATUSES}
    assert atoms("WaitingFor", NAMES) == {f'"{value}"' for value in agents.WAITING_FOR} | {"null"}
    mode = ops.ROWS["reply"].args.fields["mode"]
    assert atoms("ReplyMode", NAMES) == {f'"{option}"' for option in mode.options}


def _quiet_strings(text):
    """Each string emptied unless it is a key or a value (words in a description
    would read as keys)."""
    def keep_or_empty(found):
        after = text[found.end():found.end() + 3].lstrip()
        return found.group(0) if after[:1] in (":", ",", "}", ")") else '""'
    return re.sub(r'"(?:[^"\\]|\\.)*"', keep_or_empty, text)


def _items(text):
    """The top-level items of the object literal `text` starts with, and where it ends."""
    items, depth, start, index = [], 0, 1, 0
    while index < len(text):
        char = text[index]
        if char == '"':
            index = text.index('"', index + 1)
        elif char in "{([":
            depth += 1
        elif char in "})]":
            depth -= 1
            if depth == 0:
                items.append(text[start:index])
                return items
        elif char == "," and depth == 1:
            items.append(text[start:index])
            start = index + 1
        index += 1
    return items


def literal_keys(text):
    """The keys of the object literal `text` starts with: `key: value`, shorthand `key`,
    and those of an object spread into it (`...(c ? { key: v } : {})`); not the keys of
    an object that is a key's value."""
    keys = set()
    for item in _items(text):
        item = item.strip()
        if item.startswith("..."):
            for inner in re.finditer(r"\{", item):
                keys |= literal_keys(item[inner.start():])
            continue
        found = re.match(r"(\w+)\s*(?::|$)", item)
        if found:
            keys.add(found.group(1))
    return keys


def calls(source):
    """(op, action or None, argument names) for each request the client makes:
    `this.call("op", args)` and `{ op: "op", args }` in a method, `op: "op", args: (...) =>
    ({...})` in a tool's entry; `args` an object literal or a name given one (`const args:
    JsonObject = {...}`, then `args.key = ...`)."""
    found = []
    bodies = re.findall(r"\n  (?:private |public |static |async )*\w+\([^)]*\)[^{\n]*\{(.*?)\n  \}", source,
                        re.DOTALL)
    bodies += [f'this.call("{op}", ' + body for op, body in
               re.findall(r'op: "([\w-]+)",\s*args: \([^)]*\) => \((.*?)\),\n    say:', source, re.DOTALL)]
    for body in bodies:
        body = _quiet_strings(body)
        for request in re.finditer(r'this\.call\("([\w-]+)"(?:,\s*)?|\{\s*op: "([\w-]+)",\s*args(?:: )?', body):
            op = request.group(1) or request.group(2)
            rest = body[request.end():]
            if rest.startswith("{"):
                keys = literal_keys(rest)
            else:
                name = re.match(r"(\w*)", rest).group(1) or "args"
                given = re.search(r"const " + name + r"(?:: \w+)? = (\{.*)", body, re.DOTALL)
                keys = literal_keys(given.group(1)) if given else set()
                keys |= set(re.findall(r"\b" + name + r"\.(\w+) =", body))
            if request.group(1) and rest.startswith(")"):
                keys = set()
            actions = re.findall(r'action: "([\w-]+)"', body)
            found.append((op, actions[0] if actions else None, keys))
    return found


def declared_fields(op, action):
    row = ops.ROWS[op]
    if row.by is not None:
        assert action in row.actions, f"{op} has no action {action!r}"
        return set(row.actions[action].contract.fields)
    return set(row.args.fields)


def test_every_request_the_clients_make_is_one_the_rows_declare():
    made = calls(SOURCE) + calls(read(TOOLS))
    seen = {(op, action) for op, action, _ in made}
    assert {("hello", None), ("report", None), ("ack", None), ("peers", None), ("send", None), ("watch", None),
            ("task", "list"), ("task", "claim"), ("task", "done"), ("task", "release"), ("task", "add")} <= seen
    for op, action, keys in made:
        assert op in ops.ROWS, op
        undeclared = keys - declared_fields(op, action)
        assert not undeclared, (op, action, undeclared)


def test_a_planted_undeclared_argument_is_found():
    planted = '\n  send(to: string) {\n    return this.call("send", { to, loudly: true });\n  }\n'
    [(op, action, keys)] = calls(planted)
    assert (op, keys - declared_fields(op, action)) == ("send", {"loudly"})
