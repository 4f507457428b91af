"""docs/protocol.md, generated from the op table: every op's row (roost.ops.ROWS) with
its callers (roost.ops.callers REFUSED, and ACTIONS for an op with actions), its
arguments, its result and the codes it may answer, as the daemon checks them
(roost.contract); the shapes they share; the error codes (roost.errors.CODES); and the
protocol's milestones (M9, M43, ...) the code names, each with a line.

    .venv/bin/python scripts/protocol_doc.py           # print it
    scripts/docs                                       # write docs/protocol.md

tests/test_protocol_doc.py fails when docs/protocol.md and the rows drift apart, or when
the code names a milestone MILESTONES does not describe.
"""

import inspect
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from roost import errors, ops  # noqa: E402
from roost.contract import LEFT_OUT, REQUIRED, ListOf, MapOf, Shape  # noqa: E402
from roost.ops import callers  # noqa: E402

TARGET = os.path.join(ROOT, "docs", "protocol.md")
CALLERS = (callers.PERSON, callers.CONCIERGE, callers.SESSION, callers.UNREGISTERED, callers.IN_JOB)
NAMES = {callers.PERSON: "Person", callers.CONCIERGE: "Concierge", callers.SESSION: "Session",
         callers.UNREGISTERED: "Unregistered agent", callers.IN_JOB: "In a job"}
MILESTONE = re.compile(r"\bM(\d{1,3})\b")

# What each milestone the code names is, from the protocol's text.
MILESTONES = {
    8: "context and thinking on a row: how full the session's context window is (`ContextInfo`)",
    9: "worker reports: a worker connection's run (or a user turn) ended (`WorkerReport`); `agentItems`: "
       "agent messages and reports with acks item by item",
    10: "a session's own git worktree (`DispatchArgs.worktree`, a row's `worktree`)",
    13: "`parentOpen` on a row: someone holds the parent session now",
    16: "a session's pull requests on its row (`prs`)",
    18: "the agent a session runs as (`DispatchArgs.agent`)",
    24: "what a session spent, as it reports it (`usage`)",
    26: "one task, several models: the sessions started together share a `fanout` id",
    28: "a reply steers into the work under way or waits for it (`mode`)",
    29: "the agent that runs a job (`profile` on its row)",
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
    48: "a job started on a task (`task` on its row) and the replies waiting for it (`queued`)",
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


def cell(text):
    return str(text).replace("|", "\\|").replace("\n", " ")


def code_span(text):
    return f"`{cell(text)}`"


def who_may(rule):
    allowed = [NAMES[caller] for caller in CALLERS if callers.refusal(rule, caller) is None]
    refused = [f"{NAMES[caller]} (`{callers.refusal(rule, caller)}`)" for caller in CALLERS
               if callers.refusal(rule, caller) is not None]
    return f"Callers: {', '.join(allowed) or 'none'}. Refused: {', '.join(refused) or 'none'}."


def linked(text):
    return MILESTONE.sub(lambda found: f"[M{found.group(1)}](#m{found.group(1)})", text)


def summary(row):
    doc = row.doc or inspect.getdoc(row.fn)
    return linked(" ".join(doc.split("\n\n")[0].split())) if doc else None


def _default(field):
    default = field.default
    if default in (REQUIRED, LEFT_OUT, None) or default == [] or default == {}:
        return ""
    return "default " + code_span(str(default).lower() if isinstance(default, bool) else default)


def args_table(shape, skip=()):
    """The fields of an argument shape: type, required, limit (and default), what it is."""
    fields = [(name, field) for name, field in shape.fields.items() if name not in skip]
    if not fields:
        return ["No fields."]
    lines = ["| Field | Type | Required | Limit | |", "|---|---|---|---|---|"]
    for name, field in fields:
        limit = ", ".join(part for part in (field.limit(), _default(field)) if part)
        if field.lenient:
            limit = ", ".join(part for part in (limit, "another type is ignored") if part)
        lines.append(f"| `{name}` | {code_span(field.spec())} | {'yes' if field.required else 'no'} | "
                     f"{cell(limit)} | {cell(linked(field.doc or ''))} |")
    return lines


def result_table(shape):
    if shape.name:
        return [f"`{shape.name}` (see [shared shapes](#shared-shapes))."]
    if not shape.fields:
        return ["No fields."]
    lines = ["| Field | Type | Required | |", "|---|---|---|---|"]
    for name, field in shape.fields.items():
        lines.append(f"| `{name}` | {code_span(field.spec())} | {'yes' if field.required else 'no'} | "
                     f"{cell(linked(field.doc or ''))} |")
    return lines


def codes_line(codes):
    return "Codes: " + ", ".join(f"`{code}`" for code in sorted(codes - {errors.INTERNAL}) + [errors.INTERNAL]) + "."


def op_section(name, row):
    module = os.path.relpath(inspect.getsourcefile(row.fn), ROOT)
    lines = [f"### `{name}`", "", f"In `{module}` (`{row.fn.__name__}`)"
             + (", answered at once on the reading connection (`quick`)." if name in ops.QUICK else ".")]
    text = summary(row)
    if text:
        lines += ["", text]
    lines += ["", who_may(row.callers or {})]
    if row.by is not None:
        lines += ["", f"Args: one of these, by `{row.by}`."]
        for action_name, action in row.actions.items():
            lines += ["", f"#### `{name}` {row.by} \"{action_name}\""]
            if action.doc:
                lines += ["", linked(action.doc)]
            if action.callers is not None:
                lines += ["", who_may(action.callers)]
            lines += [""] + args_table(action.contract)
            if action.result is not None:
                lines += ["", "Result:", ""] + result_table(action.result)
            lines += ["", codes_line(row.codes_for(action))]
        if row.result is not None:
            lines += ["", "Result (every action's, unless it says otherwise):", ""] + result_table(row.result)
        return "\n".join(lines)
    lines += ["", "Args:", ""]
    if row.args is None:
        lines += ["Not declared yet: read by the op itself (see its module)."]
    elif row.args.name:
        lines += [f"`{row.args.name}` (see [shared shapes](#shared-shapes))."]
    else:
        lines += args_table(row.args)
    lines += ["", "Result:", ""] + (result_table(row.result) if row.result is not None else ["Not declared yet."])
    lines += ["", codes_line(row.codes_for())]
    return "\n".join(lines)


def shared_shapes(rows):
    """Every named shape the rows use, by name."""
    found = {}

    def walk(field):
        if isinstance(field, Shape):
            if field.name and field.name not in found:
                found[field.name] = field
            for inner in field.fields.values():
                walk(inner)
        elif isinstance(field, ListOf):
            walk(field.item)
        elif isinstance(field, MapOf):
            walk(field.value)

    for row in rows.values():
        for shape in (row.args, row.result):
            if shape is not None:
                walk(shape)
        for action in row.actions.values():
            for shape in (action.args, action.result):
                if shape is not None:
                    walk(shape)
    return dict(sorted(found.items()))


def shape_section(name, shape):
    lines = [f"#### `{name}`", ""]
    if shape.doc:
        lines += [linked(shape.doc), ""]
    lines += args_table(shape)
    if shape.open:
        lines += ["", "Answers may carry fields of their own besides these."]
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
    ops.load()
    rows = ops.ROWS
    spec_only = sorted(set(callers.REFUSED) - set(rows))
    lines = [
        "# The protocol, op by op",
        "",
        "Generated by `scripts/docs` from the op table: each op's row (`roost/ops/`, `@op` and",
        "`@action`: its arguments, result and codes, in `roost/contract` types) and the callers' table",
        "(`roost/ops/callers.py`, `REFUSED` and `ACTIONS`); `tests/test_protocol_doc.py` fails when",
        "this file and the rows drift. Edit the code, then run `scripts/docs`.",
        "",
        "A request is one JSON line `{id, op, args}` on the daemon's socket; the answer is",
        "`{id, ok: true, result}` or `{id, ok: false, error, code}`, with the request's own id",
        "whatever its numbers (a line that is not a JSON object is answered with `id: null`).",
        "Every connection is one of five callers (`roost/ops/callers.py`): a Person (a process",
        "outside every job that never identified itself), an Unregistered agent (said `hello`, no",
        "accepted report yet), a Session (a report accepted, or `peer_register`, or `speak_for`),",
        "the Concierge (the hub's own agent), and In a job (a process inside a job that never",
        "identified itself: never the person). An op with no row in the callers' table is refused",
        "to everyone.",
        "",
        "The daemon checks a request's arguments against its op's row before the op runs: a",
        "field of the wrong type, a missing one, or one out of its limits is `bad_request` naming",
        "the field; fields a row does not name are ignored; JSON null is an absent field unless",
        "its type says `null`. A number past 64 bits, one no double holds, or a lone surrogate,",
        "anywhere in a request, is `bad_request` too. Types: `string`, `integer`, `number`,",
        "`boolean`, `T[]`, `Record<string, T>`, `{ field?: T }` (`?`: may be left out), a quoted",
        "value, `unknown` (any JSON, taken whole), and the shared shapes below.",
        "",
        "## Error codes",
        "",
        "`roost/errors.py`: the closed set; every answer's `code` is one of these.",
        "",
        "| code | |",
        "|---|---|",
    ]
    lines += [f"| `{code}` | {cell(linked(meaning))} |" for code, meaning in errors.CODES.items()]
    lines += ["", "## Shared shapes", ""]
    for name, shape in shared_shapes(rows).items():
        lines += [shape_section(name, shape), ""]
    lines += ["## Ops", ""]
    for name in sorted(rows):
        lines += [op_section(name, rows[name]), ""]
    if spec_only:
        lines += ["## Ops the callers' table names that this daemon does not offer", "",
                  "Refused as the table says, else answered `unsupported`: "
                  + ", ".join(f"`{name}`" for name in spec_only) + ".", ""]
    lines += ["## Milestones", "",
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
