"""The daemon: one per home. Checks the home, takes the lock, binds the socket, serves.

Start-up order matters: patch gevent first (nothing else imported it yet), umask 077
before anything is created, the home checked before it is trusted, the lock taken before
the socket is touched (so of two daemons started at once exactly one serves), a stale
socket removed only when nothing answers on it.
"""

import gc
import logging
import os
import resource
import signal
import socket
import stat
import sys
import time

from roost import paths
from roost.unix import pidlock
from roost.unix import private_socket

log = logging.getLogger(__name__)


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
        os.makedirs(path, mode=0o700)
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


class Daemon:
    """What every op reaches through `call.daemon`: the home and the domain objects."""

    def __init__(self, home, socket_path, user_umask):
        self.home = home
        self.socket_path = socket_path
        self.user_umask = user_umask
        self.started_at = int(time.time() * 1000)
        self.pty_error = None
        self.server = None
        self.stopped = None          # gevent Event, set once stop() finished
        self._stopping = False
        self._config = None
        self._config_stamp = None
        self.stop_hooks = []         # fn(keep_workers), run before the socket goes away

    def config(self):
        """roost.json as a dict, re-read when the file changes."""
        from roost import config

        path = paths.config_file({**os.environ, "ROOST_HOME": self.home})
        self._config, self._config_stamp = config.load(path, self._config, self._config_stamp)
        return self._config

    def stop(self, keep_workers=False):
        if self._stopping:
            return
        self._stopping = True
        log.info("stopping (keepWorkers=%s)", keep_workers)
        # The socket goes first, so no new client reaches a daemon on its way out.
        try:
            os.unlink(self.socket_path)
        except FileNotFoundError:
            pass
        self.server.stop_accepting()
        for hook in list(self.stop_hooks):
            try:
                hook(keep_workers)
            except Exception:
                log.exception("a stop hook failed")
        self.server.drain(5)
        self.stopped.set()


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
    import gevent.event

    from roost import ops
    from roost.daemon import logs
    from roost import store
    from roost.server.connection import Server

    user_umask = os.umask(0o077)
    home = paths.home()
    sock_path = paths.default_socket(home)
    try:
        check_home(home)
        lock = pidlock.take(os.path.join(home, "daemon.lock"))
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
    store.use_threadpool()
    if sock_path != os.path.join(home, "roost.sock"):
        # The home is too deep for a unix socket: say where the socket went.
        store.write_bytes(os.path.join(home, "socket.path"), sock_path.encode() + b"\n")
    daemon = Daemon(home, sock_path, user_umask)
    daemon.stopped = gevent.event.Event()
    ops.load()
    # What is made so far (modules, the op table) lives as long as the daemon: out of the
    # collector's way, a full collection walks only what came since, ~1 ms instead of ~5
    # (issue 3: the loop never pauses over 10 ms while a job floods).
    gc.freeze()
    daemon.server = Server(daemon, listener)
    for hook in _start_hooks():
        hook(daemon)
    daemon.server.start()
    # A signal stops the daemon, not the jobs: a restart, an upgrade or a logout must
    # not take the user's sessions with it (the keeper holds them for the next daemon).
    # Only `shutdown` without keepWorkers ends every job.
    gevent.signal_handler(signal.SIGTERM, gevent.spawn, daemon.stop, True)
    gevent.signal_handler(signal.SIGINT, gevent.spawn, daemon.stop, True)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    log.info("roost daemon %d serving %s", os.getpid(), sock_path)
    gevent.get_hub().threadpool.spawn(_remove_unused_copies)
    daemon.stopped.wait()
    log.info("roost daemon %d stopped", os.getpid())
    os.close(lock)
    return 0


def _remove_unused_copies():
    """Other releases' unpacked copies that no program runs from (frozen only); run on a
    thread of the pool, as removing 30 MB of files takes a while."""
    from roost.bundle import unpacked_copies

    try:
        unpacked_copies.remove_unused_copies()
    except OSError as error:
        log.warning("looking for unused unpacked copies: %s", error)


def _start_hooks():
    from roost.jobs.registry import daemon_started

    def link_agents(daemon):
        from roost.jobs.agent_links import AgentLinks

        daemon.agent_links = AgentLinks(daemon.jobs)

    return [daemon_started, link_agents]


def main(argv):
    """`roost daemon --foreground [--detached]` (argv after the subcommand); `roost
    daemon` without --foreground is the CLI's (roost/commands/daemon.py)."""
    detached = "--detached" in argv   # how the CLI starts it: no terminal, stdio to files
    return serve(foreground=not detached, detached=detached)
