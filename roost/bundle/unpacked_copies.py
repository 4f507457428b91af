"""The copies of dist/roost unpacked in the cache (packaging/launcher.sh): one per release,
about 30 MB each, so the ones no program runs from any more are removed.

Every frozen roost process holds a shared flock on its own copy's marker
(`.roost-complete`) for its whole life (bundle.hold_own_copy). The daemon, once started,
looks at the other copies beside its own: a copy whose marker it can lock exclusively is
used by no one. It is renamed aside first (a launcher then no longer finds it and would
unpack afresh), then removed.
"""

import fcntl
import logging
import os
import re
import shutil

from roost.bundle.files import MARKER, own_copy

# A copy's directory is named VERSION-HASH by scripts/build.
_COPY_NAME = re.compile(r"^[0-9A-Za-z][0-9A-Za-z.+_-]*-[0-9a-f]{8,64}$")
ASIDE = ".old."

log = logging.getLogger("roost.copies")


def remove_unused_copies():
    """Remove the other copies beside ours that no process holds; their names."""
    directory = own_copy()
    if directory is None:
        return []
    root, ours = os.path.split(directory)
    removed = []
    for name in sorted(os.listdir(root)):
        if name.startswith(ASIDE):
            shutil.rmtree(os.path.join(root, name), ignore_errors=True)   # left by a removal cut short
            continue
        if name == ours or not _COPY_NAME.match(name):
            continue
        if _remove_if_unused(root, name):
            removed.append(name)
    return removed


def _remove_if_unused(root, name):
    path = os.path.join(root, name)
    if os.path.islink(path) or not os.path.isdir(path):
        return False
    try:
        fd = os.open(os.path.join(path, MARKER), os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
    except OSError:
        return False    # not a complete copy: the launcher deals with those
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False    # a program runs from it
        aside = os.path.join(root, f"{ASIDE}{name}.{os.getpid()}")
        try:
            os.rename(path, aside)
        except OSError as error:
            log.warning("cannot set aside the unused copy %s: %s", path, error)
            return False
    finally:
        os.close(fd)
    shutil.rmtree(aside, ignore_errors=True)
    log.info("removed %s: an unpacked copy of another roost release that no program uses", path)
    return True
