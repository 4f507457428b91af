"""The environment of the programs roost starts.

The frozen binary (PyInstaller) changes its own environment: it puts its bundled
libraries first on `LD_LIBRARY_PATH` (keeping the user's in `LD_LIBRARY_PATH_ORIG`) and
sets private `_PYI_*` variables for its own children. An agent, git or gh must not see
any of that (STYLE traps): they get the user's environment back from `user_environ()`.
roost itself, re-launched detached (the daemon, the keeper), gets `detached_environ()`.
From source both are the environment as it is.
"""

import os
import sys

# Read by PyInstaller's bootloader at start. Other PYINSTALLER_* names (a user's own
# PYINSTALLER_CONFIG_DIR when a job builds something with PyInstaller) are the user's.
_BOOTLOADER_VARIABLES = (
    "_MEIPASS2",
    "PYINSTALLER_RESET_ENVIRONMENT",
    "PYINSTALLER_STRICT_UNPACK_MODE",
    "PYINSTALLER_SUPPRESS_SPLASH_SCREEN",
)
_BOOTLOADER_PREFIXES = ("_PYI_",)

# The library search path of the bootloader and the user's original value, saved by it.
_LIBRARY_PATH = "LD_LIBRARY_PATH"
_LIBRARY_PATH_SAVED = "LD_LIBRARY_PATH_ORIG"


def _frozen():
    return bool(getattr(sys, "frozen", False))


def user_environ(env=None):
    """A copy of `env` (default: os.environ) as the user had it before roost started.

    Frozen: `LD_LIBRARY_PATH` back to `LD_LIBRARY_PATH_ORIG`, or removed when the user
    had none, and the bootloader's variables dropped. From source: an unchanged copy.
    roost sets no TMPDIR of its own (its binary never unpacks into one), so there is
    none to undo.
    """
    env = dict(os.environ if env is None else env)
    if not _frozen():
        return env
    saved = env.pop(_LIBRARY_PATH_SAVED, None)
    if saved is None:
        env.pop(_LIBRARY_PATH, None)
    else:
        env[_LIBRARY_PATH] = saved
    for name in list(env):
        if name in _BOOTLOADER_VARIABLES or name.startswith(_BOOTLOADER_PREFIXES):
            del env[name]
    return env


def is_text(value):
    """Whether a name or value can go on the wire: os.environ keeps bytes that are not
    UTF-8 as lone surrogates, which no JSON answer could carry."""
    try:
        value.encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


def detached_environ(env=None):
    """The environment for roost re-launched as a process that outlives its starter.

    Frozen, the bootloader of the new process must start afresh rather than take itself
    for the child of the process that started it (PYINSTALLER_RESET_ENVIRONMENT), and
    must find the user's `LD_LIBRARY_PATH`, not ours twice over; it then sets up its
    own. roost's binary runs from an unpacked copy that stays in place (scripts/build),
    so nothing it needs is deleted when the starter exits.
    """
    env = user_environ(env)
    if _frozen():
        env["PYINSTALLER_RESET_ENVIRONMENT"] = "1"
    return env


def roost_command():
    """The argv prefix that runs roost itself: append a subcommand and its arguments."""
    if _frozen():
        return [sys.executable]
    return [sys.executable, "-m", "roost"]
