"""A job's end as the keeper records it: the wait status in words, and exit.json written
atomically by the keeper's own writer (it imports nothing of the daemon's)."""

import json
import os


def exit_fields(status):
    """A wait status as {status, code, signal}: code for a normal exit, signal when killed."""
    if os.WIFSIGNALED(status):
        return {"status": status, "code": None, "signal": os.WTERMSIG(status)}
    return {"status": status, "code": os.waitstatus_to_exitcode(status), "signal": None}


def write_json_atomic(path, value):
    """The keeper's own atomic writer (it imports nothing of the daemon's): temp, fsync,
    rename, fsync of the directory."""
    directory = os.path.dirname(path)
    temp = os.path.join(directory, f".{os.path.basename(path)}.{os.getpid()}.tmp")
    data = json.dumps(value, ensure_ascii=False, indent=2).encode("utf-8") + b"\n"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(temp, path)
    dir_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
