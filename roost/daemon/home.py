"""The daemon's home and socket, checked before they are trusted: a home that is not
safely ours is refused, a stale socket is removed only when nothing answers on it."""

import os
import socket
import stat

from roost.unix import private_socket


class HomeRefused(Exception):
    """The home or socket cannot be used safely; the text says why, for a person."""


def check_home(home):
    """Create the home 0700, or refuse one that is not safely ours."""
    _check_private_dir(home, "roost's home")


def _check_private_dir(path, what):
    """Make `path` (0700) or accept it only when it is a real directory of ours that no
    one else may write to."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        # Daemons started at once (two commands that each start one) may both make it:
        # the one that comes second finds it made, and checks it like any other.
        os.makedirs(path, mode=0o700, exist_ok=True)
        info = os.lstat(path)
    if stat.S_ISLNK(info.st_mode):
        raise HomeRefused(f"{path} is a symlink; {what} must be a real directory")
    if not stat.S_ISDIR(info.st_mode):
        raise HomeRefused(f"{path} is not a directory")
    if info.st_uid != os.getuid():
        raise HomeRefused(f"{path} belongs to uid {info.st_uid}, not to you (uid {os.getuid()})")
    if info.st_mode & 0o002:
        raise HomeRefused(f"{path} is world-writable; roost will not keep its state there")
    if stat.S_IMODE(info.st_mode) != 0o700:
        os.chmod(path, 0o700)


def _answers(path):
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(1)
    try:
        probe.connect(path)
        return True
    except OSError:
        return False
    finally:
        probe.close()


def bind_socket(path, home):
    directory = os.path.dirname(path)
    if directory != home:
        # A home too deep for a unix socket: the socket lives in a directory of ours
        # under the runtime directory (CONTRACT.md), checked like the home itself.
        _check_private_dir(os.path.dirname(directory), "the socket's directory")
        _check_private_dir(directory, "the socket's directory")
    if os.path.lexists(path):
        if _answers(path):
            raise HomeRefused(f"another daemon answers on {path}")
        os.unlink(path)   # stale: nothing answers on it
    return private_socket.listen(path, 4096)
