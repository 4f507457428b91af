"""docs/protocol.md, generated from the code: every op of the op table (roost.ops.OPS)
with its callers (roost.ops.callers REFUSED, and ACTIONS for an op with actions), the
arguments and result fields its own code reads and returns, and the codes it refuses
with; and the protocol's milestones (M9, M43, ...) the code names, each with a line.

    .venv/bin/python scripts/protocol_doc.py           # print it
    scripts/docs                                       # write docs/protocol.md

The arguments and fields are read off each op's source (its `read.*(call.args, "x")`
calls, `call.args.get("x")`, its `return {...}`, and those of the helpers of its module
it hands `call` to): what an op passes on whole is named as such, not guessed at.
tests/test_protocol_doc.py fails when docs/protocol.md and the tables drift apart, or
when the code names a milestone MILESTONES does not describe.
"""

import ast
import inspect
import os
import re
import sys
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from roost import ops  # noqa: E402
from roost.ops import agents, callers  # noqa: E402

TARGET = os.path.join(ROOT, "docs", "protocol.md")
CALLERS = (callers.PERSON, callers.CONCIERGE, callers.SESSION, callers.UNREGISTERED, callers.IN_JOB)
NAMES = {callers.PERSON: "Person", callers.CONCIERGE: "Concierge", callers.SESSION: "Session",
         callers.UNREGISTERED: "Unregistered agent", callers.IN_JOB: "In a job"}
MILESTONE = re.compile(r"\bM(\d{1,3})\b")

# What each milestone the code names is, from the protocol's text.
MILESTONES = {
    9: "worker reports: a worker connection's run (or a user turn) ended (`WorkerReport`); `agentItems`: "
       "agent messages and reports with acks item by item",
    13: "`parentOpen` on a row: someone holds the parent session now",
    30: "profiles: a level 0 agent started from a profile (`DispatchArgs.profile`), `resumeCommand`",
    31: "the protocol's draft version 1: `hello`, capabilities (a daemon before it answers `hello` "
        "with `bad_request`)",
    36: "request ids: a resend with the same `requestId` is taken once, the first answer given again",
    39: "schedules: sessions on a clock (`schedules`, `schedule-add`, ... and `ScheduleRow`)",
    40: "resume: a profile with `resume` carries on a run cut short (`resumable`, autoResume)",
    43: "sessions that talk: `send` and its message rules (`duplicate`), `watch` and its `notice`, `events`",
    44: "the concierge: the hub's own agent, woken by a `digest`",
    45: "suggested answers: a waiting row's `suggested`, the concierge's policy and `concierge-reply`",
    46: "standing orders: `concierge-order` add, rm, list",
    47: "the task board: the `tasks` capability and the `task` op",
    49: "who may call what: the hub's ops refused (`unsupported`) to a session's connection",
    50: "messages from other sessions: `onMessage`, an agent reached by its job",
    52: "projects: a task is for a git repository (`project`), or for any session",
    54: "workspaces: a task's own git worktree and its stage (`workspaces` capability)",
    55: "a workspace's actions: `start` a session in the prepared worktree, merge",
    56: "verify: `.roost/project.json`'s commands, approved by a person, run at `done`",
    57: "the concierge may `start` a task when its policy lets it act",
    58: "review comments on lines of a task's diff (`comment`, `uncomment`, `back`)",
    59: "`shelve` a clean worktree, `cleanup` what was left behind",
    60: "`pr`: push the branch and open a pull request",
    65: "`prepare`: the daemon makes the task's worktree and says where",
}


# What roost adds to the spec's types, with the values as the code has them:
# (types, field, its type, what it is).
ADDED_FIELDS = (
    ("JobRow, WorkerReport", "waitingFor",
     lambda: " \\| ".join(f'`"{value}"`' for value in agents.WAITING_FOR) + " \\| `null`",
     "issue 19: `limit`, the agent stopped at its usage limit (a profile's `term.limit` read it, or the "
     "agent reported it)"),
    ("JobRow, WorkerReport", "resetsAt", lambda: "`number \\| null`",
     "issue 19: when that limit resets (ms since the epoch); null when the screen gives no time roost can "
     "read, and on every row not at a limit"),
)


class OpSource:
    """What an op's source shows: the arguments it reads, the fields it returns, the
    codes it raises, whether it passes the arguments on whole."""

    def __init__(self, fn):
        self.fn = fn
        module = sys.modules[fn.__module__]
        self.module_path = os.path.relpath(inspect.getsourcefile(module), ROOT)
        tree = ast.parse(textwrap.dedent(inspect.getsource(module)))
        self.helpers = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}
        self.args, self.fields, self.codes, self.passed_on = [], [], set(), []
        seen = set()
        self._read(self.helpers[fn.__name__], seen)

    def _read(self, function, seen):
        if function.name in seen:
            return
        seen.add(function.name)
        self.names = _named_strings(function)
        for node in ast.walk(function):
            if isinstance(node, ast.Call):
                self._call(node, seen)
            elif isinstance(node, ast.Subscript) and _is_call_args(node.value):
                key = _string(node.slice)
                if key:
                    self._arg(key, True)
            elif isinstance(node, ast.Return) and isinstance(node.value, ast.Dict) and function.name == self.fn.__name__:
                for key in node.value.keys:
                    if _string(key) and _string(key) not in self.fields:
                        self.fields.append(_string(key))

    def _call(self, node, seen):
        name = _called(node)
        if name in ("bad_request", "not_found"):
            self.codes.add(name)
        elif name == "RoostError" and node.args and _string(node.args[0]):
            self.codes.add(_string(node.args[0]))
        if node.args and _is_call_args(node.args[0]) and len(node.args) > 1:
            keys = [_string(node.args[1])] if _string(node.args[1]) else self.names.get(_name(node.args[1]), [])
            if keys and isinstance(node.func, ast.Attribute) and _root_name(node.func) == "read":
                required = not any(keyword.arg == "default" for keyword in node.keywords)
                for key in keys:
                    self._arg(key, required, node.func.attr)
                return
        if isinstance(node.func, ast.Attribute) and node.func.attr == "get" and _is_call_args(node.func.value):
            if node.args and _string(node.args[0]):
                self._arg(_string(node.args[0]), False)
            return
        if name in self.helpers and any(_is_call(arg) for arg in node.args):
            names = self.names
            self._read(self.helpers[name], seen)
            self.names = names
            return
        if any(_is_call_args(arg) for arg in node.args) and name not in ("_arg",):
            where = ast.unparse(node.func)
            if where not in self.passed_on:
                self.passed_on.append(where)

    def _arg(self, key, required, kind=None):
        for entry in self.args:
            if entry[0] == key:
                entry[1] = entry[1] or required
                entry[2] = entry[2] or kind
                return
        self.args.append([key, required, kind])


def _named_strings(function):
    """name -> the strings it stands for in `function`: a parameter's default
    (`name="id"`), a loop's variable over a tuple of strings."""
    found = {}
    arguments = function.args
    for argument, default in zip(arguments.args[len(arguments.args) - len(arguments.defaults):], arguments.defaults):
        if _string(default):
            found[argument.arg] = [_string(default)]
    for node in ast.walk(function):
        if isinstance(node, (ast.For, ast.comprehension)) and isinstance(node.iter, (ast.Tuple, ast.List)):
            values = [_string(item) for item in node.iter.elts]
            if _name(node.target) and all(values):
                found[_name(node.target)] = values
    return found


def _name(node):
    return node.id if isinstance(node, ast.Name) else None


def _string(node):
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _is_call(node):
    return isinstance(node, ast.Name) and node.id == "call"


def _is_call_args(node):
    return isinstance(node, ast.Attribute) and node.attr == "args" and _is_call(node.value)


def _called(node):
    if isinstance(node.func, ast.Name):
        return node.func.id
    return node.func.attr if isinstance(node.func, ast.Attribute) else None


def _root_name(node):
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def who_may(rule):
    allowed = [NAMES[caller] for caller in CALLERS if callers._refusal(rule, caller) is None]
    refused = [f"{NAMES[caller]} (`{callers._refusal(rule, caller)}`)" for caller in CALLERS
               if callers._refusal(rule, caller) is not None]
    return f"Callers: {', '.join(allowed) or 'none'}. Refused: {', '.join(refused) or 'none'}."


def summary(fn):
    doc = inspect.getdoc(fn)
    return " ".join(doc.split("\n\n")[0].split()) if doc else None


def op_section(name, fn):
    source = OpSource(fn)
    lines = [f"### `{name}`", "", f"In `{source.module_path}` (`{fn.__name__}`)"
             + (", answered at once on the reading connection (`quick`)." if name in ops.QUICK else ".")]
    text = summary(fn)
    if text:
        lines += ["", MILESTONE.sub(lambda found: f"[M{found.group(1)}](#m{found.group(1)})", text)]
    lines += ["", who_may(callers.REFUSED[name])]
    actions = callers.ACTIONS.get(name)
    if actions:
        lines += ["", "Actions (`action`), each with its own callers after the op's:", "",
                  "| action | callers | refused |", "|---|---|---|"]
        for action in sorted(actions):
            rule = actions[action]
            allowed = ", ".join(NAMES[c] for c in CALLERS if callers._refusal(rule, c) is None) or "none"
            refused = ", ".join(f"{NAMES[c]} (`{callers._refusal(rule, c)}`)" for c in CALLERS
                                if callers._refusal(rule, c) is not None) or "none"
            lines.append(f"| `{action}` | {allowed} | {refused} |")
    lines += ["", "Arguments: " + (", ".join(
        f"`{key}`{'' if required else '?'}" + (f" ({kind})" if kind else "") for key, required, kind in source.args)
        or "none read by the op itself") + "."]
    if source.passed_on:
        named = [f"`{where}`" for where in source.passed_on]
        lines.append("The arguments go on whole to " + " and ".join(named)
                     + (", which reads the rest." if len(named) == 1 else ", which read the rest."))
    lines += ["", "Result: " + (", ".join(f"`{field}`" for field in source.fields)
                                if source.fields else "built by the code it calls (the op returns no dict literal)") + "."]
    codes = sorted(source.codes | {code for code in (callers._refusal(callers.REFUSED[name], c) for c in CALLERS)
                                   if code} | ({"bad_request"} if actions else set()))
    lines += ["", "Codes: " + ", ".join(f"`{code}`" for code in codes + ["internal"]) + "."]
    return "\n".join(lines)


def named_milestones():
    """milestone number -> the files of roost that name it."""
    found = {}
    paths = [os.path.join(ROOT, "roost_agent.py")]
    for directory, _, names in os.walk(os.path.join(ROOT, "roost")):
        paths += [os.path.join(directory, name) for name in names if name.endswith(".py")]
    for path in sorted(paths):
        with open(path, encoding="utf-8") as handle:
            for number in MILESTONE.findall(handle.read()):
                found.setdefault(int(number), set()).add(os.path.relpath(path, ROOT))
    return found


def render():
    table = ops.load()
    spec_only = sorted(set(callers.REFUSED) - set(table))
    lines = [
        "# The protocol, op by op",
        "",
        "Generated by `scripts/docs` from the op table (`roost/ops/`, `OPS`) and the callers' table",
        "(`roost/ops/callers.py`, `REFUSED` and `ACTIONS`); `tests/test_protocol_doc.py` fails when",
        "this file and the tables drift. Edit the code, then run `scripts/docs`.",
        "",
        "A request is one JSON line `{id, op, args}` on the daemon's socket; the answer is",
        "`{id, ok: true, result}` or `{id, ok: false, error, code}`. Every connection is one of five",
        "callers (`roost/ops/callers.py`): a Person (a process outside every job that never identified",
        "itself), an Unregistered agent (said `hello`, no accepted report yet), a Session (a report",
        "accepted, or `peer_register`, or `speak_for`), the Concierge (the hub's own agent), and In a",
        "job (a process inside a job that never identified itself: never the person). An op with no",
        "row in the callers' table is refused to everyone. Arguments marked `?` may be left out; the",
        "kind in brackets is how `roost/args.py` reads it. Any op may answer `internal` (a bug, logged",
        "with its traceback).",
        "",
        "## Ops",
        "",
    ]
    for name in sorted(table):
        lines += [op_section(name, table[name]), ""]
    if spec_only:
        lines += ["## Ops the callers' table names that this daemon does not offer", "",
                  "Refused as the table says, else answered `unsupported`: "
                  + ", ".join(f"`{name}`" for name in spec_only) + ".", ""]
    lines += ["## Fields roost adds to the spec's types", "", "| in | field | type | what it is |", "|---|---|---|---|"]
    lines += [f"| {types} | `{field}` | {kind()} | {what} |" for types, field, kind, what in ADDED_FIELDS]
    lines += ["", "## Milestones", "",
              "The code names the protocol's milestones where a rule comes from one (`M47`); each is:", "",
              "| milestone | what it is | named in |", "|---|---|---|"]
    named = named_milestones()
    for number in sorted(named):
        what = MILESTONES.get(number, "NOT DESCRIBED: add it to scripts/protocol_doc.py MILESTONES")
        files = ", ".join(f"`{path}`" for path in sorted(named[number])[:4])
        more = f" and {len(named[number]) - 4} more" if len(named[number]) > 4 else ""
        lines.append(f"| <a id=\"m{number}\"></a>M{number} | {what} | {files}{more} |")
    return "\n".join(lines) + "\n"


def main(argv):
    text = render()
    if "--write" in argv:
        with open(TARGET, "w", encoding="utf-8") as handle:
            handle.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
