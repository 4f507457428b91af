"""`roost keeper --home H [--linger SECONDS]`: the keeper's start (roost/keeper.py is the
keeper itself). Its secret (admission.py) comes on stdin, one line, from the daemon that
starts it: never on its command line or in its environment, which other processes of
the user may read. Standard library only."""

import ctypes
import logging
import os
import sys

from roost.keeper.keeper import LINGER_S, Keeper, log
from roost.keeper.wire import socket_path
from roost.unix import pidlock

_PR_SET_CHILD_SUBREAPER = 36


def _set_subreaper():
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        log.error("prctl(PR_SET_CHILD_SUBREAPER) failed: errno %d", ctypes.get_errno())


def _options(argv):
    """{"--name": value} from `--name value` and `--name=value`; None when malformed."""
    options, rest = {}, list(argv)
    while rest:
        word = rest.pop(0)
        name, equals, value = word.partition("=")
        if not name.startswith("--") or (not equals and not rest):
            return {"": word}
        options[name] = value if equals else rest.pop(0)
    return options


def _read_secret(stream):
    """The first line of stdin, or None when there is none that could be a secret."""
    try:
        line = stream.buffer.readline(256) if stream is not None else b""
    except (OSError, ValueError, AttributeError):
        return None
    secret = line.decode("ascii", "replace").strip()
    return secret if len(secret) >= 32 else None


def main(argv):
    """`roost keeper --home H [--linger SECONDS]` (argv after the subcommand)."""
    options = _options(argv)
    home = options.get("--home")
    try:
        linger = float(options.get("--linger", LINGER_S))
    except ValueError:
        linger = None
    if not home or linger is None or set(options) - {"--home", "--linger"}:
        sys.stderr.write("usage: roost keeper --home DIR [--linger SECONDS]\n")
        return 2
    home = os.path.abspath(home)
    secret = _read_secret(sys.stdin)
    if secret is None:
        sys.stderr.write("roost keeper: no secret on stdin (the daemon that starts a keeper passes one)\n")
        return 2
    os.umask(0o077)
    os.chdir("/")   # hold no directory of the user's busy
    logging.basicConfig(stream=sys.stderr, level=logging.INFO,
                        format="%(asctime)s %(process)d %(levelname)s keeper: %(message)s")
    if not os.path.isdir(home):
        sys.stderr.write(f"roost keeper: {home} is not a directory\n")
        return 1
    lock = pidlock.take(os.path.join(home, "keeper.lock"))
    if lock is None:
        sys.stderr.write(f"roost keeper: another keeper serves {home}\n")
        return 1
    _set_subreaper()
    keeper = Keeper(home, secret, linger)
    keeper.install_signals()
    keeper.bind()
    log.info("keeper %d serving %s", os.getpid(), socket_path(home))
    try:
        return keeper.run()
    finally:
        try:
            if keeper.leaving:
                os.unlink(socket_path(home))
        except OSError:
            pass
        os.close(lock)
