"""What checking a request's arguments against its op's row costs (roost.ops.run, before
the op runs), in-process, against a floor measured in the same run: decoding the same
request line with the house codec (what every request pays before any check); and
beside it what the op's body spent reading the same arguments before the rows had
contracts (roost/args.py's `read.*` calls as the ops made them at 1f3f68a, that file's
code loaded from git).

    .venv/bin/python bench/contracts.py          # prints the figures
"""

import json
import os
import re
import subprocess
import sys
import time
import types

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from roost import codec, ops  # noqa: E402

LAUNCH = {"kind": "shell", "cwd": "/tmp", "command": ["sleep", "60"], "env": {"A": "1"}, "name": "worker",
          "sessionFile": "", "origin": "dispatch", "rows": 40, "cols": 120, "task": "do the thing"}
REQUESTS = [
    ("ping", {}),
    ("list", {"all": True}),
    ("events", {"after": 120, "limit": 50}),
    ("reply", {"id": "a1b2c3d4", "text": "also fix the docs", "mode": "steer"}),
    ("report", {"id": "a1b2c3d4", "token": "t" * 43, "report": {
        "state": "blocked", "status": "waiting", "waitingFor": "question", "summary": "reading the code",
        "question": "Go on?", "choices": ["yes", "no"], "tool": None, "error": None, "name": None,
        "model": "m", "context": {"tokens": 1000, "window": 200000, "percent": 0.5}}}),
    ("task", {"action": "add", "title": "a task", "detail": "what it is", "after": [1, 2]}),
    ("dispatch", LAUNCH),
]
REPEATS = 5
BEFORE = "1f3f68a"      # the last commit whose ops read their arguments in their bodies
REQUEST_ID = re.compile(r"[A-Za-z0-9_.:-]{1,64}")


def _old_reader():
    """roost/args.py as it was at BEFORE, as a module."""
    source = subprocess.run(["git", "show", f"{BEFORE}:roost/args.py"], cwd=ROOT, capture_output=True, text=True,
                            check=True).stdout
    module = types.ModuleType("old_args")
    exec(compile(source, "old_args.py", "exec"), module.__dict__)
    return module


def _request_id(args):
    value = args.get("requestId")
    if value is not None and (not isinstance(value, str) or not REQUEST_ID.fullmatch(value)):
        raise ValueError(value)


def _old_dispatch(read, args):
    read.choice(args, "kind", ("pi", "shell"), default="shell")
    read.text(args, "cwd", min_length=1)
    read.strings(args, "command", default=[])
    read.mapping(args, "env", default={})
    read.text(args, "profile", default=None)
    task = args.get("task")
    if isinstance(task, str):
        read.check_typed(task, "task")
    read.strings(args, "resumeCommand", default=None)
    for name in ("resumable", "protocol", "person"):
        read.flag(args, name, default=None)
    read.flag(args, "taskInArgv", default=False)
    read.choice(args, "origin", ("bg", "dispatch", "adopt", "fork"), default="dispatch")
    read.integer(args, "rows", default=40, minimum=2, maximum=1000)
    read.integer(args, "cols", default=120, minimum=2, maximum=1000)
    read.choice(args, "restart", ("always", "never"), default=None)
    read.text(args, "name", default="")
    for name in ("sessionFile", "model", "thinking"):
        read.text(args, name, default=None)
    _request_id(args)


def _old_row_fields():
    """row_fields of roost/ops/agents.py at BEFORE (what `report` read of the snapshot in
    its body then), from git."""
    source = subprocess.run(["git", "show", f"{BEFORE}:roost/ops/agents.py"], cwd=ROOT, capture_output=True,
                            text=True, check=True).stdout
    from roost.errors import RoostError
    from roost.jobs.launch import RESERVED_NAMES, fold_name
    namespace = {"RoostError": RoostError, "RESERVED_NAMES": RESERVED_NAMES, "fold_name": fold_name, "codec": codec}
    exec(source[source.index("STATES = "):source.index("def caller_of")], namespace)
    exec(source[source.index("def _cut"):source.index('@op("report")')], namespace)
    return namespace["row_fields"]


def _old_report(read, args):
    read.text(args, "id", min_length=1)
    read.text(args, "token")
    OLD_ROW_FIELDS[0](read.mapping(args, "report"))


OLD_ROW_FIELDS = []


# How each op read the same arguments in its body at BEFORE.
OLD_READS = {
    "ping": lambda read, args: None,
    "list": lambda read, args: (read.flag(args, "all"), read.text(args, "cwd", default=None)),
    "events": lambda read, args: (read.number(args, "after", default=None), read.number(args, "limit", default=None),
                                  read.text(args, "id", default=None, min_length=1)),
    "reply": lambda read, args: (read.text(args, "id", min_length=1),
                                 read.text(args, "text", min_length=1, trim=True, typed="reply text"),
                                 read.choice(args, "mode", ("steer", "followUp"), default="followUp"),
                                 _request_id(args)),
    "report": _old_report,
    "task": lambda read, args: ([read.integer({"id": item}, "id", minimum=1, digits_ok=True) for item in
                                 args.get("after") or []],
                                read.text(args, "title", min_length=1, trim=True, typed="task title"),
                                read.text(args, "detail", default=None, typed="task detail")),
    "dispatch": _old_dispatch,
}


def _per_call_us(fn, count):
    best = []
    for _ in range(REPEATS):
        started = time.perf_counter()
        for _ in range(count):
            fn()
        best.append((time.perf_counter() - started) / count * 1e6)
    return sorted(best)[len(best) // 2]


def _checker(name):
    row = ops.ROWS[name]
    if row.by is not None:
        return lambda args: row.action_of(args).contract.check_fields(args)
    shape = row.args
    if name == "report":
        # what the body still reads of a checked snapshot, as the old one did of the raw one
        from roost.ops.agents import row_fields
        return lambda args: row_fields(shape.check_fields(args)["report"])
    return lambda args: shape.check_fields(args) if shape.fields else {}


def measure(count=20000):
    ops.load()
    read = _old_reader()
    OLD_ROW_FIELDS[:] = [_old_row_fields()]
    figures = {}
    for name, args in REQUESTS:
        line = json.dumps({"id": 7, "op": name, "args": args}).encode()
        check, old = _checker(name), OLD_READS[name]
        figures[name] = {
            "decode_us": round(_per_call_us(lambda: codec.decode(line), count), 3),
            "before_us": round(_per_call_us(lambda: old(read, args), count), 3),
            "check_us": round(_per_call_us(lambda: check(args), count), 3),
            "fields": len(args) if name != "task" else len(args) - 1,
        }
    return figures


def report(figures):
    lines = ["Each request's arguments checked against its op's row, in-process (median of 5 runs of "
             "20,000), beside the floor, decoding the same request line with roost's codec, and beside "
             f"what the op's body spent reading them at {BEFORE} (its `read.*` calls; for `report` both "
             "sides include the body's reading of the snapshot, `row_fields`).", "",
             "| request | fields given | decode (floor), µs | read in the body (before), µs | checked by the row, µs "
             "| row / decode | row / before |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for name, entry in figures.items():
        before = entry["before_us"]
        lines.append(f"| `{name}` | {entry['fields']} | {entry['decode_us']:.2f} | {before:.2f} | "
                     f"{entry['check_us']:.2f} | {entry['check_us'] / entry['decode_us']:.2f} | "
                     + (f"{entry['check_us'] / before:.2f} |" if before >= 0.05 else "- |"))
    return "\n".join(lines)


def headline(figures):
    return [(f"check µs, {name}", f"{entry['check_us']:.2f}") for name, entry in figures.items()]


if __name__ == "__main__":
    print(report(measure()))
