"""Writing a file in a directory a job can write, without following what the job put
there: the house's one atomic writer, and the open of a file roost keeps writing (a
job's output log).

A job has its directory (`ROOST_JOB_DIR`), and whatever runs in it may plant a link, or
a hard link, where roost is about to write: at `output.log`, at `exit.json`, at a temp
name it can guess. Followed, roost would write the user's files wherever the link
points. So:

- a temp name is random and made with O_EXCL | O_NOFOLLOW: nothing planted there is
  ever opened (a name that is taken is drawn again), then renamed over the file (a
  rename replaces a link, it never writes through one);
- a file kept open for writing is opened with O_NOFOLLOW, and must be a plain file with
  one name: a link or a hard link planted in its place is removed (logged) and the file
  made anew with O_EXCL, so the job goes on and the other file is never touched;
- a file read back out (a log's tail, told to the person and to sessions) is read only
  when it is such a plain file: a link to the user's key is never read into a message.

The keeper imports this (standard library only); roost.store routes it through its
threadpool; roost_agent.py, which must stay one standard-library file, keeps a copy of
`write_atomic` with the same checks (a test runs both against the same plants).
"""

import errno
import logging
import os
import secrets
import stat

log = logging.getLogger(__name__)

TEMP_TRIES = 8


def write_atomic(path, data, mode=0o600, durable=True):
    """Replace `path` with `data`, durably: a temp of a random name beside it (O_EXCL,
    O_NOFOLLOW), written, fsynced, renamed over `path`, and the directory fsynced.
    `durable=False` leaves out the fsyncs, for a file that need not outlive a crash (a
    scratch file, or a copy made again from its source when it is missing)."""
    directory = os.path.dirname(path) or "."
    fd, temp = _new_temp(directory, os.path.basename(path), mode)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp, path)
    except BaseException:
        _unlink_quietly(temp)
        raise
    if durable:
        fsync_dir(directory)


def _new_temp(directory, name, mode):
    for _attempt in range(TEMP_TRIES):
        temp = os.path.join(directory, f".{name}.{secrets.token_hex(6)}.tmp")
        try:
            return os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode), temp
        except FileExistsError:
            log.warning("%s was there already (planted?): another name is drawn", temp)
    raise FileExistsError(errno.EEXIST, f"no free temp name for {name} in {directory}")


def open_own(path, flags, mode=0o600):
    """os.open(path, flags | O_CREAT) of a file roost owns in a directory a job can
    write: never through a link, never a file with another name elsewhere. Whatever was
    planted there instead is removed and the file made anew (empty)."""
    flags |= os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(path, flags | os.O_NONBLOCK, mode)     # O_NONBLOCK: a planted fifo never blocks
    except OSError as error:
        if error.errno != errno.ELOOP:
            raise
        return _anew(path, flags, mode, "a symbolic link")
    info = os.fstat(fd)
    if stat.S_ISREG(info.st_mode) and info.st_nlink == 1:
        os.set_blocking(fd, True)
        return fd
    os.close(fd)
    return _anew(path, flags, mode, "a hard link" if stat.S_ISREG(info.st_mode) else "not a plain file")


def open_own_for_reading(path):
    """A read-only fd of a file roost wrote where a job can write, or None when there is
    none, or what is there is a link, a hard link or not a plain file: a job's plant,
    never read out to anyone (a log's tail goes to the person and to sessions)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError as error:
        if error.errno != errno.ELOOP:
            raise
        log.warning("%s is a symbolic link (planted?): not read", path)
        return None
    info = os.fstat(fd)
    if stat.S_ISREG(info.st_mode) and info.st_nlink == 1:
        return fd
    os.close(fd)
    log.warning("%s is %s (planted?): not read", path,
                "a hard link" if stat.S_ISREG(info.st_mode) else "not a plain file")
    return None


def _anew(path, flags, mode, what):
    log.warning("%s was %s (planted?): removed, and the file made anew", path, what)
    os.unlink(path)
    return os.open(path, flags | os.O_EXCL, mode)


def fsync_dir(directory):
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _unlink_quietly(path):
    try:
        os.unlink(path)
    except OSError:
        pass
