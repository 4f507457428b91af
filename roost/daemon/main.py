"""The daemon: one per home. Checks the home, takes the lock, binds the socket, builds
its services, serves until asked to leave.

Start-up order matters: patch gevent first (nothing else imported it yet), umask 077
before anything is created, the home checked before it is trusted, the lock taken before
the socket is touched (so of two daemons started at once exactly one serves), a stale
socket removed only when nothing answers on it, every job adopted before the first
request is read.
"""

import functools
import gc
import logging
import os
import resource
import signal
import sys

from roost import __version__, paths
from roost.daemon.home import HomeRefused, bind_socket, check_home
from roost.unix import pidlock

log = logging.getLogger(__name__)

DRAIN_S = 5.0      # at the end, time for answers already queued to reach their clients


def _raise_fd_limit():
    # 1024 connections plus every job's pty need more than the usual soft limit of 1024.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = 16384 if hard == resource.RLIM_INFINITY else min(hard, 16384)
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))


def _log_greenlet_errors(hub):
    """A greenlet that dies goes to the log with its traceback (gevent would print it to
    stderr, which a detached daemon does not have)."""
    def print_exception(context, kind, value, tb):
        if kind is not None and issubclass(kind, hub.NOT_ERROR + hub.SYSTEM_ERROR):
            return
        log.error("a greenlet died (%s)", context, exc_info=(kind, value, tb))

    hub.print_exception = print_exception


def _stdio_to_files(home):
    """A detached daemon's stdio: never a terminal or a pipe that may close under it."""
    null = os.open(os.devnull, os.O_RDWR)
    errors = os.open(os.path.join(home, "daemon.stderr"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.dup2(errors, 2)
    os.close(null)
    os.close(errors)


def serve(foreground=False, detached=False):
    from roost.daemon import patching

    patching.patch()
    import gevent

    from roost import blocking, git, ops, store
    from roost.daemon import logs
    from roost.daemon.services import Services
    from roost.jobs import jail_places
    from roost.server.listener import Server

    user_umask = os.umask(0o077)
    home = paths.home()
    sock_path = paths.default_socket(home)
    try:
        check_home(home)
        lock = pidlock.take(os.path.join(home, "daemon.lock"), note=f"roost {__version__}")
        if lock is None:
            raise HomeRefused(f"a roost daemon already serves {home}")
        logs.setup(home, foreground)
        listener = bind_socket(sock_path, home)
        if detached:
            _stdio_to_files(home)
    except HomeRefused as refusal:
        sys.stderr.write(f"roost daemon: {refusal}\n")
        return 1
    except OSError as error:
        sys.stderr.write(f"roost daemon: cannot start: {error}\n")
        return 1
    _raise_fd_limit()
    _log_greenlet_errors(gevent.get_hub())
    blocking.use_threadpool()       # the store's fsyncs and dulwich's reads, off the loop
    git.use_umask(user_umask)       # worktrees get the user's file modes, not the daemon's 077
    try:
        jail_places.link_socket(sock_path)     # the name jails reach it by
    except OSError as error:
        log.error("cannot give the socket its jails' name: %s; jobs started now reach only this daemon", error)
    # git's jails see neither roost's home nor its socket (issue 26 item 4)
    git.use_jails((home, os.path.dirname(sock_path), os.environ.get("XDG_RUNTIME_DIR")), os.path.join(home, "git"))
    if sock_path != os.path.join(home, "roost.sock"):
        # The home is too deep for a unix socket: say where the socket went.
        store.write_bytes(os.path.join(home, "socket.path"), sock_path.encode() + b"\n")
    ops.load()
    services = Services(home, sock_path, user_umask)
    # What is made so far (modules, the op table) lives as long as the daemon: out of the
    # collector's way, a full collection walks only what came since, ~1 ms instead of ~5
    # (issue 3: the loop never pauses over 10 ms while a job floods).
    gc.freeze()
    services.start()
    # A partial, not a lambda: one Python frame less on every request.
    server = Server(listener, functools.partial(ops.run, services), services.origins.place)
    server.start()
    services.web.start()        # roost.json's `web`: it connects to the socket now serving
    # A signal stops the daemon, not the jobs: a restart, an upgrade or a logout must
    # not take the user's sessions with it (the keeper holds them for the next daemon).
    # Only `shutdown` without keepWorkers ends every job.
    gevent.signal_handler(signal.SIGTERM, services.shutdown.request, True)
    gevent.signal_handler(signal.SIGINT, services.shutdown.request, True)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    log.info("roost daemon %d serving %s", os.getpid(), sock_path)
    blocking.start(_remove_unused_copies)
    keep_workers = services.shutdown.wait()
    _leave(server, services, sock_path, keep_workers)
    log.info("roost daemon %d stopped", os.getpid())
    os.close(lock)
    return 0


def _leave(server, services, sock_path, keep_workers):
    log.info("stopping (keepWorkers=%s)", keep_workers)
    # The socket goes first, so no new client reaches a daemon on its way out.
    from roost.jobs import jail_places
    for path in (sock_path, jail_places.socket_link(sock_path)):
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
    server.stop_accepting()
    try:
        services.stop(keep_workers)
    except Exception:
        log.exception("stopping the jobs failed")
    server.drain(DRAIN_S)


def _remove_unused_copies():
    """Other releases' unpacked copies that no program runs from (frozen only); run on a
    thread of the pool, as removing 30 MB of files takes a while."""
    from roost.bundle import unpacked_copies

    try:
        unpacked_copies.remove_unused_copies()
    except OSError as error:
        log.warning("looking for unused unpacked copies: %s", error)


def main(argv):
    """`roost daemon --foreground [--detached]` (argv after the subcommand); `roost
    daemon` without --foreground is the CLI's (roost/cli/commands/daemon.py)."""
    detached = "--detached" in argv   # how the CLI starts it: no terminal, stdio to files
    return serve(foreground=not detached, detached=detached)
