"""The one module that writes roost's state files.

Every write is atomic and durable before the caller goes on (an append to a log is
durable, and its reader drops a torn last line): roost.unix.files' writer, the house's
one (a temp of a random name made with O_EXCL and O_NOFOLLOW in the same directory,
write, fsync, os.replace, fsync of the directory: dulwich's GitFile pattern), so a link
a job planted in its directory is never written through. Every file carries a "version"; callers read-modify-write the dict they
loaded, so fields this version does not know survive. A damaged file is set aside as
`<name>.corrupt-<time>`, logged and remembered (status lists it), never silently
replaced by an empty state.

Under gevent the blocking part (write + fsync) runs in the hub's threadpool (the one
seam, roost.blocking), so one slow disk does not stall every connection. Outside gevent
(the keeper, the CLI) it runs inline.
"""

import errno
import logging
import os
import shutil
import threading
import time

from roost import blocking, codec
from roost.unix.files import fsync_dir, open_own, write_atomic

log = logging.getLogger(__name__)

_corrupt_lock = threading.Lock()
corrupt_files = []            # paths set aside in this process's life (for status)


def write_bytes(path, data, mode=0o600):
    """Replace `path` with `data`, durably. Returns once it is on disk."""
    blocking.call(write_atomic, path, bytes(data), mode)


def write_json(path, value, mode=0o600):
    """Replace `path` with `value` as JSON, durably. `value` should carry "version"."""
    data = codec.encode_pretty(value).encode("utf-8") + b"\n"
    blocking.call(write_atomic, path, data, mode)


def append_bytes(path, data, mode=0o600):
    """Append `data` to `path`, durably (an append-only log, the event feed's): returns
    once it is on disk. A crash may leave a torn last line, which its reader drops."""
    blocking.call(_append, path, bytes(data), mode)


class OpenLog:
    """A log one writer appends to often (the feed): opened once, so an append is one
    write and one fdatasync in the threadpool, not the eight calls of opening it anew
    (each a hand-over of the GIL between the loop and the thread: issue 21). A log
    replaced meanwhile (a compaction's write_bytes) is `reopen`ed by its writer."""

    def __init__(self, path, mode=0o600):
        self.path = path
        self.mode = mode
        self._fd = None

    def append(self, data):
        """Append `data`, durably: returns once it is on disk."""
        blocking.call(self._append, bytes(data))

    def _append(self, data):
        if self._fd is None:
            self._fd, created = _open_log(self.path, self.mode)
            if created:
                fsync_dir(os.path.dirname(self.path) or ".")
        try:
            _write_all(self._fd, data)
            os.fdatasync(self._fd)
        except BaseException:
            self.reopen()       # the next append starts from what is on disk, on a new fd
            raise

    def reopen(self):
        """Close the fd: the next append opens the file at its path again."""
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)


def append_many(appends, mode=0o600):
    """Append each (path, data) and fdatasync it, all in one blocking call: a batch of
    records to several logs (the reply books') costs one trip to the threadpool."""
    blocking.call(_append_many, appends, mode)


def _append_many(appends, mode):
    for path, data in appends:
        _append(path, data, mode, sync=os.fdatasync)


def truncate(path, size):
    """Cut a log roost owns back to `size` bytes, durably (a fold of a log)."""
    blocking.call(truncate_now, path, size)


def truncate_now(path, size):
    """The same, without leaving the caller's greenlet (a torn record cut off as a book
    is read, where nothing else may run meanwhile)."""
    fd = open_own(path, os.O_WRONLY)
    try:
        os.ftruncate(fd, size)
        os.fsync(fd)
    finally:
        os.close(fd)


def _open_log(path, mode):
    """(fd, whether the file was made now) of a log opened for appending."""
    created = not os.path.exists(path)
    return open_own(path, os.O_WRONLY | os.O_APPEND, mode), created


def _write_all(fd, data):
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _append(path, data, mode, sync=os.fsync):
    fd, created = _open_log(path, mode)
    try:
        _write_all(fd, data)
        sync(fd)
    finally:
        os.close(fd)
    if created:
        fsync_dir(os.path.dirname(path) or ".")


def read_json(path, default=None):
    """The JSON value in `path`; `default` when there is none.

    A file that is not a JSON object is damaged: it is renamed aside and `default`
    returned, and the damage is logged and listed in `corrupt_files`."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except FileNotFoundError:
        return default
    try:
        value = codec.decode(data)
        if not isinstance(value, dict):
            raise ValueError("not a JSON object")
        return value
    except ValueError as error:
        set_aside(path, str(error))
        return default


def set_aside(path, why):
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    target = f"{path}.corrupt-{stamp}"
    suffix = 1
    while os.path.exists(target):
        suffix += 1
        target = f"{path}.corrupt-{stamp}-{suffix}"
    try:
        os.replace(path, target)
    except OSError as error:
        log.error("damaged state file %s (%s) could not be set aside: %s", path, why, error)
        target = path
    else:
        log.error("damaged state file %s (%s) set aside as %s", path, why, target)
    with _corrupt_lock:
        corrupt_files.append(target)
    return target


def make_private_dir(path):
    """mkdir -p with 0700 for what is created (the umask does the rest in the daemon)."""
    os.makedirs(path, mode=0o700, exist_ok=True)


def remove_tree(path):
    """Remove a directory roost made (a job's), durably gone from its parent."""
    def remove():
        for attempt in range(3):
            try:
                shutil.rmtree(path)
                break
            except FileNotFoundError:
                return
            except OSError as error:
                # A file made in it while it was being emptied (a writer of the job's that
                # had not heard yet): empty it again.
                if error.errno != errno.ENOTEMPTY or attempt == 2:
                    raise
        parent = os.path.dirname(path)
        try:
            fsync_dir(parent)
        except OSError as error:
            if error.errno != errno.ENOENT:
                raise

    blocking.call(remove)
