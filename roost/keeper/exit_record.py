"""A job's end as the keeper records it: the wait status in words, and exit.json written
by the house's atomic writer (roost.unix.files: standard library only, as the keeper is),
which never follows a link the job planted in its directory."""

import json
import os

from roost.unix.files import write_atomic


def exit_fields(status):
    """A wait status as {status, code, signal}: code for a normal exit, signal when killed."""
    if os.WIFSIGNALED(status):
        return {"status": status, "code": None, "signal": os.WTERMSIG(status)}
    return {"status": status, "code": os.waitstatus_to_exitcode(status), "signal": None}


def write_json_atomic(path, value):
    """`value` as JSON in `path`, atomically and durably."""
    write_atomic(path, json.dumps(value, ensure_ascii=False, indent=2).encode("utf-8") + b"\n")
