"""`roost` inside every job: a job's PATH starts with `$ROOST_HOME/bin`, which holds a
`roost` that runs this very roost, however it was installed (the frozen binary, or a
checkout's `python -m roost` with no `roost` anywhere on the user's PATH). So a job's
`roost task done 1` or `roost peers` works where the user's shell would say "not found".

The daemon writes the script at start, so after an upgrade it names the new release;
its values are quoted for sh, never built from a job's input.
"""

import logging
import os
import shlex
import sys

from roost import store
from roost.bundle import files

log = logging.getLogger(__name__)

BIN_DIR = "bin"
NAME = "roost"


def bin_dir(home):
    return os.path.join(home, BIN_DIR)


def script_text():
    """The script that runs this roost with the arguments it is given."""
    if files.is_frozen():
        # The unpacked binary itself: no launcher to go through on every call.
        return f"#!/bin/sh\nexec {shlex.quote(sys.executable)} \"$@\"\n"
    checkout = shlex.quote(files.bundle_dir())
    return ("#!/bin/sh\n"
            f"PYTHONPATH={checkout}${{PYTHONPATH:+:$PYTHONPATH}}\n"
            "export PYTHONPATH\n"
            f"exec {shlex.quote(sys.executable)} -m roost \"$@\"\n")


def install(home):
    """Write `$ROOST_HOME/bin/roost` (0700, atomically) and return its directory; None
    when it cannot be written (logged: the daemon serves on, its jobs without it)."""
    directory = bin_dir(home)
    try:
        store.make_private_dir(directory)
        store.write_bytes(os.path.join(directory, NAME), script_text().encode(), mode=0o700)
    except OSError as error:
        log.error("cannot write %s (%s): jobs will not find roost on their PATH", directory, error)
        return None
    return directory


def first_on_path(env, directory):
    """`env` with `directory` first on its PATH (and not again further on)."""
    rest = [entry for entry in env.get("PATH", os.defpath).split(os.pathsep) if entry and entry != directory]
    env["PATH"] = os.pathsep.join([directory] + rest)
    return env
