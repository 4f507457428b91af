"""Files shipped inside roost: found the same way from a checkout and from the
frozen binary (CONTRACT: `roost agent-file` writes the bundled `roost_agent.py`)."""

import fcntl
import os
import sys

AGENT_FILE = "roost_agent.py"
BUILTIN_PROFILES = os.path.join("roost", "jobs", "builtin_profiles.json")
DOCS = "docs"     # the manual: every docs/*.md, shown by `roost help`
# The pi extension of the built-in `pi` profile and the client it imports beside it.
PI_EXTENSION = os.path.join("clients", "typescript", "pi", "roost.ts")
TYPESCRIPT_CLIENT = os.path.join("clients", "typescript", "src", "roost-agent.ts")
PI_TOOLS = os.path.join("clients", "typescript", "pi", "tools.ts")   # roost.ts imports it
MARKER = ".roost-complete"    # in an unpacked copy of dist/roost (packaging/launcher.sh)
BUILD_INFO = "roost-build.json"   # written into the bundle by scripts/build
_held = []


def is_frozen():
    """True in the PyInstaller build (dist/roost), False when run from source."""
    return bool(getattr(sys, "frozen", False))


def bundle_dir():
    """The directory that holds roost's data files.

    Frozen: PyInstaller's `_MEIPASS` (the onedir bundle's `_internal`), where roost.spec
    puts them. From source: the checkout's root, the parent of the `roost` package.
    """
    if is_frozen():
        return sys._MEIPASS
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def agent_file_path():
    """The path of the bundled `roost_agent.py`."""
    return os.path.join(bundle_dir(), AGENT_FILE)


def bundled(relative):
    """The path of a file shipped with roost (roost.spec's datas), by its path in the
    checkout."""
    return os.path.join(bundle_dir(), relative)


def build_info():
    """What scripts/build recorded of this build ({"commit", "glibc", "arch"}), or None
    from source."""
    if not is_frozen():
        return None
    import json

    try:
        with open(os.path.join(bundle_dir(), BUILD_INFO), encoding="utf-8") as handle:
            info = json.load(handle)
    except (OSError, ValueError):
        return None
    return info if isinstance(info, dict) else None


def version_text(version):
    """`roost --version`: the version, and for a build its commit and the oldest glibc
    it runs on."""
    info = build_info()
    if info is None:
        return f"roost {version} ({'a build without its build record' if is_frozen() else 'from source'})"
    return (f"roost {version} (commit {str(info.get('commit', 'unknown'))[:12]}, linux {info.get('arch', '?')}, "
            f"glibc {info.get('glibc', '?')} or newer)")


def own_copy():
    """The directory of the unpacked copy of dist/roost this process runs from, or None
    (from source, or from an onedir bundle unpacked by hand)."""
    if not is_frozen():
        return None
    directory = os.path.dirname(os.path.abspath(sys.executable))
    return directory if os.path.isfile(os.path.join(directory, MARKER)) else None


def hold_own_copy():
    """Mark this process's copy as in use until it exits, so that a newer release's
    daemon does not remove it (unpacked_copies); the fd is closed on exec."""
    directory = own_copy()
    if directory is None:
        return
    try:
        fd = os.open(os.path.join(directory, MARKER), os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)    # being removed right now: this run already has what it needs
        return
    _held.append(fd)
