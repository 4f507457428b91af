"""The keeper: the tiny process that holds every job's pty so no daemon restart loses one
(DESIGN.md "Processes", the systemd fd-store pattern).

`roost keeper --home H`, started detached by the first daemon. Standard library only, no
gevent: one poll loop. It spawns each agent on a new pty (its own session, the pty its
controlling terminal), keeps a copy of the master fd (and of the job's carry pipe)
until the daemon says it drained it (`release`), is child subreaper so it reaps the
agents and everything they leave behind, writes each job's exit status into the job's
directory (`exit.json`), and passes master fds to the daemon over `keeper.sock` with
SCM_RIGHTS.

The wire, its ops and their versions: roost.keeper.wire (the requests are the `op_`
methods below). There is no resize: the daemon sets the window size on its own copy of
the master.
"""

import json
import logging
import os
import re
import select
import signal
import time

from roost.clock import now_ms
from roost.framing import LineTooLong
from roost.keeper import admission
from roost.keeper.exit_record import exit_fields, write_json_atomic
from roost.keeper.spawn import SpawnRefused, spawn_on_pty
from roost.keeper.wire import VERSION, Peer, socket_path
from roost.unix import private_socket, terminal_waits

# With no daemon connected and no job running, the keeper looks around this often and
# leaves once its home is gone, or after LINGER_S with nothing of a job's left to hand
# over (a daemon killed with kill -9 comes back well within that).
IDLE_CHECK_S = 2.0
LINGER_S = 60.0
# A job id names a directory under jobs/: never "." or "..", never a path.
_JOB_ID = re.compile(r"^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,63}$")

log = logging.getLogger("roost.keeper")


class KeptJob:
    __slots__ = ("job", "pid", "master", "carry", "job_dir", "exited", "released")

    def __init__(self, job, pid, master, carry, job_dir):
        self.job = job
        self.pid = pid
        self.master = master
        self.carry = carry       # (read end, write end) of its carry pipe, or None
        self.job_dir = job_dir
        self.exited = None       # exit_fields() once reaped
        self.released = False    # the daemon drained it: our master copy is closed

    def release(self):
        """Closes our copies of its fds: the master and the carry pipe."""
        for fd in (self.master, *(self.carry or ())):
            os.close(fd)
        self.released = True


class Refusal(Exception):
    pass


class Keeper:
    def __init__(self, home, secret, linger=LINGER_S):
        self.home = home
        self.secret = secret  # what a daemon's hello must carry (admission.py)
        self.linger = linger
        self.idle_since = None
        self.told_unread = False
        self.jobs = {}        # job id -> KeptJob
        self.by_pid = {}      # leader pid -> KeptJob
        self.peers = {}       # fd -> Peer
        self.leaving = False
        self.listener = None
        self.poller = select.poll()
        self.wakeup_read = None
        self.prober = terminal_waits.Prober()

    # -- start ----------------------------------------------------------------
    def bind(self):
        path = socket_path(self.home)
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        if os.path.lexists(path):
            os.unlink(path)   # we hold keeper.lock: whatever is there is stale
        listener = private_socket.listen(path, 16)
        listener.setblocking(False)
        self.listener = listener
        self.poller.register(listener.fileno(), select.POLLIN)

    def install_signals(self):
        read_end, write_end = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self.wakeup_read = read_end
        signal.set_wakeup_fd(write_end)
        # A handler (not SIG_IGN) so the wakeup fd is written; reaping happens in the loop.
        signal.signal(signal.SIGCHLD, lambda *_: None)
        signal.signal(signal.SIGTERM, self._terminate)
        signal.signal(signal.SIGINT, self._terminate)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)
        self.poller.register(read_end, select.POLLIN)

    def _terminate(self, signum, frame):
        # The jobs live on (their masters are also the daemon's); only reaping stops.
        log.warning("keeper %d ends on signal %d with %d jobs", os.getpid(), signum, len(self.jobs))
        raise SystemExit(0)

    # -- loop -----------------------------------------------------------------
    def run(self):
        self.reap()
        while True:
            running = any(kept.exited is None for kept in self.jobs.values())
            if self.leaving and not running:
                log.info("keeper %d: no job runs after bye, exiting", os.getpid())
                return 0
            idle = not running and not self.peers
            if idle and self._done_lingering():
                self.leaving = True     # the socket goes with it
                return 0
            self.idle_since = (self.idle_since or time.monotonic()) if idle else None
            try:
                events = self.poller.poll(min(IDLE_CHECK_S, self.linger) * 1000 if idle else None)
            except InterruptedError:
                continue
            for fd, mask in events:
                if fd == self.wakeup_read:
                    self._drain_wakeup()
                    self.reap()
                elif self.listener is not None and fd == self.listener.fileno():
                    self.accept()
                else:
                    peer = self.peers.get(fd)
                    if peer is not None:
                        self.service(peer, mask)

    def _done_lingering(self):
        if not os.path.isdir(self.home):
            log.info("keeper %d: %s is gone, exiting", os.getpid(), self.home)
            return True
        if self.idle_since is None or time.monotonic() - self.idle_since < self.linger:
            return False
        unread = sum(not kept.released for kept in self.jobs.values())
        if unread:
            if not self.told_unread:
                log.info("keeper %d: %d ended jobs' output not yet read: waiting for a daemon", os.getpid(), unread)
                self.told_unread = True
            return False    # output a daemon has yet to read: wait for one
        log.info("keeper %d: no daemon and no job for %.0f s, exiting", os.getpid(), self.linger)
        return True

    def _drain_wakeup(self):
        try:
            while os.read(self.wakeup_read, 512):
                pass
        except BlockingIOError:
            pass

    def accept(self):
        while True:
            try:
                sock, _ = self.listener.accept()
            except BlockingIOError:
                return
            except OSError as error:
                log.error("accept failed: %s", error)
                return
            refused = admission.refused(sock, self.home)
            if refused:
                log.warning("refused a connection: %s", refused)
                sock.close()
                continue
            sock.setblocking(False)
            self.peers[sock.fileno()] = Peer(sock)
            self.poller.register(sock.fileno(), select.POLLIN)

    def service(self, peer, mask):
        if mask & select.POLLIN or mask & (select.POLLHUP | select.POLLERR):
            try:
                chunk = peer.sock.recv(65536)
            except BlockingIOError:
                chunk = None
            except OSError:
                chunk = b""
            if chunk == b"":
                self.drop(peer)
                return
            if chunk:
                try:
                    lines = peer.inbox.lines(chunk)
                except LineTooLong:
                    self.drop(peer)
                    return
                for line in lines:
                    if peer.closing:
                        break
                    self.handle(peer, line)
        self._flush(peer)

    def _flush(self, peer):
        if not peer.flush() or peer.closing and not peer.outbox:
            self.drop(peer)
            return
        wanted = select.POLLIN | (select.POLLOUT if peer.outbox else 0)
        self.poller.modify(peer.sock.fileno(), wanted)

    def drop(self, peer):
        fd = peer.sock.fileno()
        self.peers.pop(fd, None)
        try:
            self.poller.unregister(fd)
        except (KeyError, ValueError):
            pass
        peer.sock.close()

    def broadcast(self, message):
        for peer in list(self.peers.values()):
            if not peer.proven:
                continue
            peer.queue(message)
            self._flush(peer)

    # -- requests -------------------------------------------------------------
    def handle(self, peer, line):
        request_id = None
        try:
            request = json.loads(line)
            if not isinstance(request, dict):
                raise Refusal("a request is a JSON object")
            request_id = request.get("id")
            if not peer.proven:
                self._admit(peer, request)
            handler = getattr(self, "op_" + str(request.get("op")), None)
            if handler is None:
                raise Refusal(f"unknown op {request.get('op')!r}")
            answer, fds = handler(request)
            answer = dict(answer, id=request_id, ok=True)
            if fds:
                answer["fds"] = len(fds)
            peer.queue(answer, fds)
        except Refusal as refusal:
            peer.queue({"id": request_id, "ok": False, "error": str(refusal)})
        except Exception as error:   # one bad request never ends the keeper
            log.exception("request failed")
            peer.queue({"id": request_id, "ok": False, "error": f"keeper error: {error}"})
        if not peer.proven:
            peer.closing = True      # told why, then dropped: nothing more of it is read

    def _admit(self, peer, request):
        """A connection's first request must be a hello that proves the daemon."""
        if request.get("op") != "hello" or not admission.proves(self.secret, request.get("secret")):
            log.warning("refused a peer whose first request was not the daemon's hello (%s)",
                        str(request.get("op"))[:32])
            raise Refusal("this keeper serves only its daemon: the first request must be a hello with its secret")
        peer.proven = True

    def op_hello(self, request):
        self.leaving = False     # a daemon (a new one) counts on us again
        return {"version": VERSION, "pid": os.getpid(), "jobs": len(self.jobs)}, ()

    def op_spawn(self, request):
        job = request.get("job")
        if not isinstance(job, str) or not _JOB_ID.match(job):
            raise Refusal("job must be a job id")
        kept = self.jobs.get(job)
        if kept is not None and kept.exited is None:
            raise Refusal(f"job {job} is running (pid {kept.pid})")
        argv = request.get("argv")
        if not isinstance(argv, list) or not argv or not all(isinstance(item, str) for item in argv):
            raise Refusal("argv must be a non-empty list of strings")
        env = request.get("env") or {}
        if not isinstance(env, dict):
            raise Refusal("env must be an object")
        cwd = request.get("cwd") or "/"
        umask = request.get("umask", 0o022)
        rows = int(request.get("rows") or 40)
        cols = int(request.get("cols") or 120)
        job_dir = os.path.join(self.home, "jobs", job)
        try:
            pid, master = spawn_on_pty(argv, {str(k): str(v) for k, v in env.items()}, cwd, umask, rows, cols)
        except SpawnRefused as refused:
            raise Refusal(str(refused))
        carry = os.pipe2(os.O_CLOEXEC) if request.get("carry") else None
        if kept is not None:
            self._forget(kept)
        kept = KeptJob(job, pid, master, carry, job_dir)
        self.jobs[job] = kept
        self.by_pid[pid] = kept
        log.info("job %s started: pid %d", job, pid)
        if carry is None:
            return {"pid": pid}, (master,)
        return {"pid": pid, "carry": True}, (master, *carry)

    def op_fds(self, request):
        listed, fds = [], []
        for kept in self.jobs.values():
            if kept.released:
                continue
            item = {"job": kept.job, "pid": kept.pid, "exited": kept.exited}
            fds.append(kept.master)
            if kept.carry is not None and request.get("carry"):
                item["carry"] = True
                fds.extend(kept.carry)
            listed.append(item)
        return {"jobs": listed}, fds

    def op_signal(self, request):
        kept = self.jobs.get(request.get("job"))
        if kept is None:
            return {"sent": False}, ()
        number = request.get("signal")
        if isinstance(number, str):
            number = getattr(signal, number if number.startswith("SIG") else "SIG" + number, None)
        if not isinstance(number, int) or isinstance(number, bool):
            raise Refusal("signal must be a signal number or name")
        group = bool(request.get("group", True))
        try:
            if group:
                # The leader's pid is its group's id (setsid); the group may outlive it.
                os.killpg(kept.pid, number)
            elif kept.exited is None:
                os.kill(kept.pid, number)   # not reaped yet: the pid is still ours
            else:
                return {"sent": False}, ()
        except ProcessLookupError:
            return {"sent": False}, ()
        except PermissionError as error:
            raise Refusal(f"cannot signal job {kept.job}: {error}")
        return {"sent": True}, ()

    def op_release(self, request):
        kept = self.jobs.get(request.get("job"))
        if kept is not None and request.get("pid") not in (None, kept.pid):
            return {}, ()    # an earlier run's release: the job runs again since
        if kept is not None and not kept.released:
            kept.release()
            if kept.exited is not None:
                self._forget(kept)
        return {}, ()

    def op_probe(self, request):
        kept = self.jobs.get(request.get("job"))
        running = kept is not None and kept.exited is None and not kept.released
        return {"evidence": self.prober.probe_master(kept.pid, kept.master) if running else None}, ()

    def op_bye(self, request):
        self.leaving = True
        return {}, ()

    def _forget(self, kept):
        if not kept.released:
            kept.release()
        if self.jobs.get(kept.job) is kept:
            del self.jobs[kept.job]
        if self.by_pid.get(kept.pid) is kept:
            del self.by_pid[kept.pid]

    # -- reaping --------------------------------------------------------------
    def reap(self):
        """Reap every child that ended: our agents and what they left behind (subreaper)."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            kept = self.by_pid.pop(pid, None)
            if kept is None:
                continue   # an orphan reparented to us: nothing to record
            kept.exited = dict(exit_fields(status), at=now_ms(), pid=pid)
            log.info("job %s (pid %d) ended: %s", kept.job, pid, kept.exited)
            self._record_exit(kept)
            self.broadcast({"event": "exited", "job": kept.job, **kept.exited})
            if kept.released:
                self._forget(kept)

    def _record_exit(self, kept):
        if not os.path.isdir(kept.job_dir):
            return
        try:
            write_json_atomic(os.path.join(kept.job_dir, "exit.json"), dict(kept.exited, version=1, job=kept.job))
        except OSError as error:
            log.error("cannot record the exit of job %s: %s", kept.job, error)
