"""The daemon's side of the keeper (roost/keeper.py): finds or starts the keeper, and
turns its socket into calls (`spawn`, `fds`, `signal`, `release`, `probe`, `bye`) and pushed
exits. Runs under gevent: one greenlet reads the socket, callers wait on their answer.

File descriptors come with the bytes they were sent with (SCM_RIGHTS). The reader keeps
every fd it receives in arrival order and hands a message the number it says it carries,
so a message split over several reads, or fds split over several sendmsg calls, still
gets exactly its own.
"""

import array
import collections
import errno
import itertools
import logging
import os
import socket
import subprocess
import sys
import time

import gevent
import gevent.event
import gevent.lock

from roost import job_identity
from roost.framing import LineTooLong, MessageReader, encode_line
from roost.keeper import admission
from roost.keeper import wire as keeper_wire
from roost.unix import private_socket
from roost.unix.fds import close_all

log = logging.getLogger(__name__)

_RECV_FDS_ROOM = socket.CMSG_SPACE(253 * array.array("i").itemsize)
START_TIMEOUT = 10.0
CALL_TIMEOUT = 30.0
PROBE_TIMEOUT = 2.0     # a probe's answer comes in a millisecond; past this it is read here
# The first version that serves only the daemon (admission.py); an older one is retired.
ADMITS_ONLY_ITS_DAEMON = 3
# The first version with `probe`; with an older one the daemon reads /proc itself.
PROBES = 4


class Pty(collections.namedtuple("Pty", "pid master carry")):
    """A job's pty as the keeper gave it: the master fd and its carry pipe (or None)."""

    __slots__ = ()

    def close(self):
        close_all((self.master, *(self.carry or ())))


class KeeperError(Exception):
    """The keeper refused a request (its text says why) or could not be reached."""


class KeeperRefused(KeeperError):
    """The keeper answered no: the text is its reason (a program that cannot run, ...)."""


class KeeperLost(KeeperError):
    """The connection to the keeper ended while a request waited."""


class KeeperClient:
    def __init__(self, home, user_umask):
        self.home = home
        self.user_umask = user_umask    # what the jobs' programs are spawned with
        self.path = keeper_wire.socket_path(home)
        self.exit_listeners = []        # fn(message) for each pushed exit
        self.lost_listeners = []        # fn() when the connection ends unasked
        self.sock = None
        self.keeper_pid = None
        self.version = None
        self._ids = itertools.count(1)
        self._waiting = {}              # request id -> AsyncResult
        self._send_lock = gevent.lock.Semaphore()
        self._connect_lock = gevent.lock.Semaphore()
        self._reader = None
        self._closing = False
        self._process = None            # the Popen of a keeper this daemon started
        self.retiring = False           # an older keeper told to leave once its jobs end

    # -- connecting -----------------------------------------------------------
    @property
    def connected(self):
        return self.sock is not None

    @property
    def started_here(self):
        """The keeper served is one this daemon started (none answered before it)."""
        return self._process is not None

    def ensure(self):
        """Connected to a keeper, starting one when none answers."""
        with self._connect_lock:
            if self.sock is not None:
                return
            try:
                answer = self._hello()
            except KeeperError as error:
                # A keeper that had lingered with nothing to keep may leave just as we
                # come: a second try starts a new one.
                log.info("the keeper did not answer (%s): trying once more", error)
                self.close()
                gevent.sleep(0.05)
                answer = self._hello()
            self.version = answer.get("version")
            self.keeper_pid = answer.get("pid")
            log.info("keeper %s (version %s) holds %s jobs", self.keeper_pid, self.version, answer.get("jobs"))

    def _hello(self):
        if not self._try_connect():
            self._start_keeper()
        secret = admission.read_secret(self.home)
        if secret is None:
            self.close()
            raise KeeperError(f"a keeper runs but {admission.secret_path(self.home)} is gone: this daemon cannot "
                              "prove itself to it (stop that keeper to start a new one)")
        answer, _ = self._call({"op": "hello", "version": keeper_wire.VERSION, "secret": secret})
        return answer

    def _retire_if_older(self):
        """An older keeper serves any process of the user: its jobs are adopted (an
        upgrade loses none: `fds` comes first), and it is asked to leave once none of
        them runs, so the next spawn after that starts a keeper that serves this daemon
        alone. Until then new jobs start on it, as they did before the upgrade."""
        if isinstance(self.version, int) and self.version >= ADMITS_ONLY_ITS_DAEMON:
            return
        log.warning("keeper %s speaks wire version %s and serves any process of this user: it leaves once its "
                    "jobs end and a keeper that serves only the daemon takes over", self.keeper_pid, self.version)
        self.retiring = True
        try:
            self._call({"op": "bye"}, timeout=5)
        except KeeperError as error:
            log.warning("bye to the older keeper: %s", error)

    def _try_connect(self):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(self.path)
        except OSError as error:
            sock.close()
            if error.errno in (errno.ENOENT, errno.ECONNREFUSED):
                return False
            raise KeeperError(f"cannot reach the keeper on {self.path}: {error.strerror}")
        # Jobs' environments (tokens) go over this socket: it must be our own user's.
        uid = private_socket.peer_uid(sock)
        if uid != os.getuid():
            sock.close()
            raise KeeperError(f"{self.path} belongs to uid {uid}, not to us: not a keeper of ours")
        self._attach(sock)
        return True

    def _attach(self, sock):
        self.sock = sock
        self._closing = False
        self.retiring = False
        self._reader = gevent.spawn(self._read_loop, sock)

    def _start_keeper(self):
        from roost.bundle.userenv import detached_environ, roost_command

        # A keeper never inherits the daemon's job identity: a daemon started from inside
        # a job would otherwise pass that job's on.
        environ = job_identity.without(detached_environ())
        environ["ROOST_HOME"] = self.home
        secret = admission.ensure_secret(self.home)
        if not getattr(sys, "frozen", False):
            # From source the keeper must import the same roost as this daemon, whatever
            # directory the daemon was started from.
            here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
            environ["PYTHONPATH"] = os.pathsep.join(filter(None, [here, environ.get("PYTHONPATH")]))
        log_fd = os.open(os.path.join(self.home, "keeper.log"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        secret_read, secret_write = os.pipe2(os.O_CLOEXEC)
        try:
            # The secret goes down a pipe, never in argv or the environment (readable by
            # other processes of the user); a pipe's buffer holds it whole at once.
            os.write(secret_write, secret.encode("ascii") + b"\n")
            os.close(secret_write)
            secret_write = None
            self._process = subprocess.Popen(roost_command() + ["keeper", "--home", self.home],
                                             stdin=secret_read, stdout=log_fd, stderr=log_fd, cwd="/",
                                             start_new_session=True, env=environ, close_fds=True)
        finally:
            os.close(log_fd)
            os.close(secret_read)
            if secret_write is not None:
                os.close(secret_write)
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self._try_connect():
                log.info("started the keeper (pid %d)", self._process.pid)
                return
            if self._process.poll() is not None:
                # Another keeper may have won the lock: then it answers shortly.
                if self._try_connect():
                    return
                raise KeeperError(f"the keeper exited at once (status {self._process.returncode}); "
                                  f"see {os.path.join(self.home, 'keeper.log')}")
            gevent.sleep(0.01)
        raise KeeperError(f"the keeper did not answer on {self.path} within {START_TIMEOUT:.0f} s")

    def close(self):
        """Leave the keeper as it is (the jobs go on); forget the connection."""
        self._closing = True
        sock, self.sock = self.sock, None
        if sock is not None:
            sock.close()
        self._fail_waiting(KeeperLost("the connection to the keeper was closed"))

    # -- calls ----------------------------------------------------------------
    def _call(self, message, timeout=CALL_TIMEOUT):
        """Send one request: (answer, fds it carried); KeeperError when refused."""
        if self.sock is None:
            raise KeeperLost("not connected to the keeper")
        request_id = next(self._ids)
        result = gevent.event.AsyncResult()
        self._waiting[request_id] = result
        data = encode_line(dict(message, id=request_id))
        try:
            with self._send_lock:
                self.sock.sendall(data)
        except OSError as error:
            self._waiting.pop(request_id, None)
            raise KeeperLost(f"the keeper is gone: {error}")
        try:
            answer, fds = result.get(timeout=timeout)
        except gevent.Timeout:
            raise KeeperError(f"the keeper did not answer {message.get('op')} within {timeout:.0f} s")
        finally:
            self._waiting.pop(request_id, None)
        if not answer.get("ok"):
            for fd in fds:
                os.close(fd)
            raise KeeperRefused(answer.get("error") or "the keeper refused")
        return answer, fds

    def spawn(self, job, argv, env, cwd, rows, cols):
        """Pty(pid, master, carry) of a new job on its own pty; KeeperError says why not.
        `carry`: its carry pipe (read end, write end), or None from a keeper before 2."""
        self.ensure()
        request = {"op": "spawn", "job": job, "argv": argv, "env": env, "cwd": cwd, "rows": rows, "cols": cols,
                   "umask": self.user_umask, "carry": True}
        try:
            answer, fds = self._call(request)
        except KeeperLost:
            if not self.retiring:
                raise
            # The older keeper left between our ensure and its answer: start the new one.
            self.ensure()
            answer, fds = self._call(request)
        wanted = 3 if answer.get("carry") else 1
        if len(fds) != wanted:
            close_all(fds)
            raise KeeperError(f"the keeper started job {job} and sent {len(fds)} fds, not {wanted}")
        return Pty(answer["pid"], fds[0], tuple(fds[1:]) or None)

    def fds(self):
        """[(info, Pty)] for every job the keeper holds: info {job, pid, exited}."""
        self.ensure()
        answer, fds = self._call({"op": "fds", "carry": True})
        self._retire_if_older()
        jobs = answer.get("jobs") or []
        if len(fds) != sum(3 if item.get("carry") else 1 for item in jobs):
            close_all(fds)
            raise KeeperError(f"the keeper listed {len(jobs)} jobs with {len(fds)} fds")
        held, fds = [], iter(fds)
        for item in jobs:
            master = next(fds)
            carry = (next(fds), next(fds)) if item.get("carry") else None
            held.append((item, Pty(item.get("pid"), master, carry)))
        return held

    def signal(self, job, number, group=True):
        if self.sock is None:
            return False
        try:
            answer, _ = self._call({"op": "signal", "job": job, "signal": number, "group": group})
            return bool(answer.get("sent"))
        except KeeperLost:
            return False

    def release(self, job, pid=None):
        """The daemon drained this run of the job (its pid): the keeper closes its copy."""
        if self.sock is None:
            return
        try:
            self._call({"op": "release", "job": job, "pid": pid})
        except KeeperLost:
            pass

    def probe(self, job, timeout=PROBE_TIMEOUT):
        """What the job's processes wait on (roost.unix.terminal_waits), read by the
        keeper, their ancestor; None for a job it does not run. KeeperError from a
        keeper before version 4 (PROBES), or one that is gone."""
        if not isinstance(self.version, int) or self.version < PROBES:
            raise KeeperRefused(f"the keeper (version {self.version}) has no probe")
        answer, _ = self._call({"op": "probe", "job": job}, timeout=timeout)
        return answer.get("evidence")

    def bye(self):
        """The daemon leaves for good: the keeper exits once its last job is gone."""
        if self.sock is None:
            return
        self._closing = True    # the keeper may leave right after its answer
        try:
            self._call({"op": "bye"}, timeout=5)
        except KeeperError as error:
            log.warning("bye to the keeper: %s", error)

    # -- reading --------------------------------------------------------------
    def _read_loop(self, sock):
        reader = MessageReader(keeper_wire.MAX_LINE)
        fds = collections.deque()
        try:
            while True:
                data, ancillary, flags, _ = sock.recvmsg(65536, _RECV_FDS_ROOM)
                for level, kind, payload in ancillary:
                    if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                        received = array.array("i")
                        received.frombytes(payload[:len(payload) - len(payload) % received.itemsize])
                        fds.extend(received)
                if flags & socket.MSG_CTRUNC:
                    log.error("fds from the keeper were cut off (MSG_CTRUNC)")
                if not data:
                    break
                for message in reader.messages(data):
                    self._dispatch(message, fds)
        except (OSError, LineTooLong, ValueError) as error:
            if not self._closing:
                log.warning("reading from the keeper: %s", error)
        finally:
            for fd in fds:
                os.close(fd)
            if self.sock is sock:
                self.sock = None
                self._fail_waiting(KeeperLost("the keeper closed the connection"))
                if self.retiring and not self._closing:
                    log.info("the older keeper left: the next spawn starts a new one")
                elif not self._closing:
                    log.error("the connection to the keeper was lost")
                    for listener in list(self.lost_listeners):
                        gevent.spawn(listener)

    def _dispatch(self, message, fds):
        carried = [fds.popleft() for _ in range(min(int(message.get("fds") or 0), len(fds)))]
        if "event" in message:
            for fd in carried:
                os.close(fd)
            if message["event"] == "exited":
                for listener in list(self.exit_listeners):
                    try:
                        listener(message)
                    except Exception:
                        log.exception("handling an exit from the keeper failed")
            return
        waiter = self._waiting.get(message.get("id"))
        if waiter is None:
            for fd in carried:
                os.close(fd)
            return
        waiter.set((message, carried))

    def _fail_waiting(self, error):
        for waiter in list(self._waiting.values()):
            if not waiter.ready():
                waiter.set_exception(error)
        self._waiting.clear()
