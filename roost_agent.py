"""roost_agent: speak the roost agent protocol from any Python script.

One file, standard library only, Python 3.8 and newer. Copy it beside your agent
(`roost agent-file DIR` writes it) and:

    from roost_agent import RoostAgent
    agent = RoostAgent.from_env("my-agent", version="1.0", on_reply=lambda r: work(r.text))
    if agent:
        agent.report("working", summary="reading the code")

What it does (the protocol's "Clients" section):

- `from_env` finds the job in the environment (ROOST_JOB_ID, ROOST_JOB_TOKEN, ROOST_SOCKET,
  ROOST_JOB_DIR; else PI_JOB_ID, PI_JOB_TOKEN, PI_DAEMON_SOCK, PI_JOB_DIR) and answers None
  outside a job.
- The first `report()` connects. Every connection says `hello`, then sends the latest
  report; while the daemon is away it reconnects with backoff (50 ms doubling to 2 s).
  `report()` never blocks: a background thread owns the socket and sends only the latest
  snapshot (a report made while one is on its way replaces the one waiting).
- Replies go to `on_reply(reply)` once each, in order, one at a time, on a handler
  thread. When the handler returns, the reply's seq is written to `$ROOST_JOB_DIR/
  agent.json` (`lastSeq`; peer items in `itemSeqs`; other keys are kept), then acked; an
  agent started again skips (and only acks) what it had finished. An exception in a handler is logged and counts as handled (a crash of the
  process does not). Peer items (`kind` set) go to `on_message`, acked one by one.
- `unauthorized` or `not_found` on a report or an ack: the agent stops speaking for the
  job (see `refused`); no retry loop.
- `close()` sends the latest report and waits briefly for it to be taken; a reply whose
  handler is still running is acked only if it finishes within that wait (otherwise it
  comes again on the next start, which only acks it if the handler did finish after all).
  A script that ends without close() gets one at exit (waiting 1 s at most).
- `request(op, args, timeout)` sends any other op on the job's connection; the board's
  helpers (`tasks`, `claim_task`, `task_done`, `release_task`, `add_task`) and the peer
  ops (`peers`, `send(to, text)`, `watch(id, when)`) use it.
- `RoostPeer.register(name)` joins a process roost did not start (an agent in your own
  terminal) as a peer: it may message sessions and take messages while it is connected.

Defaults of `report()`: `status` follows the state (working: busy; blocked: waiting; done
and failed: idle). `waitingFor`, for a blocked agent only: "question" when a question or
choices are given, else "first-prompt" until the first reply was handed over in this job
(it waits for its task), then null (it waits for the next reply). Pass `status=` or
`waiting_for=` to say otherwise.

It writes nothing to stdout or stderr: it logs to the "roost_agent" logger, which carries
a NullHandler; configure logging to see it.
"""

import atexit
import collections
import json
import logging
import os
import queue
import socket
import struct
import threading
import time
import weakref

__all__ = ["RoostAgent", "RoostPeer", "RoostError", "Reply", "PROTOCOL"]
__version__ = "1.0"

PROTOCOL = 1
STATES = ("working", "blocked", "done", "failed")

log = logging.getLogger("roost_agent")
log.addHandler(logging.NullHandler())

_STATUS_OF_STATE = {"working": "busy", "blocked": "waiting", "done": "idle", "failed": "idle"}
# The daemon cuts these too (the spec's `report`); cutting here as well keeps every line
# far below the socket's 4 MiB, so an oversized report can never make a reconnect loop.
_TEXT_LIMITS = {"summary": 500, "question": 2000, "tool": 100, "error": 1000, "name": 200}
_MAX_CHOICES = 20
_MAX_CHOICE = 200
_BACKOFF_FIRST = 0.05
_BACKOFF_MAX = 2.0
_BUSY_RETRY = 0.2
_CONNECT_TIMEOUT = 5.0
_IO_TIMEOUT = 30.0   # a daemon that takes nothing for this long is treated as gone
_MAX_LINE = 64 * 1024 * 1024
_STATE_FILE = "agent.json"
_STATE_VERSION = 1
_KEPT_ITEM_SEQS = 100
# Codes that mean "this job is not yours (any more)": stop, never retry.
_FATAL_CODES = ("unauthorized", "not_found")
_ENVIRONMENT = (
    ("job_id", "ROOST_JOB_ID", "PI_JOB_ID"),
    ("token", "ROOST_JOB_TOKEN", "PI_JOB_TOKEN"),
    ("socket_path", "ROOST_SOCKET", "PI_DAEMON_SOCK"),
    ("job_dir", "ROOST_JOB_DIR", "PI_JOB_DIR"),
)
_SEND_FLAGS = getattr(socket, "MSG_NOSIGNAL", 0)


class RoostError(Exception):
    """A refusal from the daemon (`code` is the spec's: unauthorized, not_found, full,
    busy, unsupported, bad_request, ...), or `disconnected` when the connection was lost
    while a request waited for its answer."""

    def __init__(self, code, text):
        Exception.__init__(self, "%s: %s" % (code, text))
        self.code = code
        self.text = text


class _NotOurs(Exception):
    """The socket is not the user's own roost's."""


def _check_place(path):
    """Before connecting: the socket's directory is ours and no one else may write in it,
    and the socket is ours (else someone else could have put theirs there)."""
    uid = os.getuid()
    directory = os.path.dirname(os.path.abspath(path))
    try:
        info = os.stat(directory)
    except OSError:
        return   # nothing there: connecting says so
    if info.st_uid != uid:
        raise _NotOurs("%s belongs to uid %d, not to you (uid %d)" % (directory, info.st_uid, uid))
    if info.st_mode & 0o022:
        raise _NotOurs("%s may be written by others (mode %o)" % (directory, info.st_mode & 0o777))
    try:
        info = os.lstat(path)
    except OSError:
        return
    if info.st_uid != uid:
        raise _NotOurs("%s belongs to uid %d, not to you (uid %d)" % (path, info.st_uid, uid))


def _check_peer(sock, path):
    """After connecting, before a byte is sent: the listening process is ours (SO_PEERCRED)."""
    creds = struct.Struct("3i")
    pid, uid, _ = creds.unpack(sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, creds.size))
    if uid != os.getuid():
        raise _NotOurs("%s is served by uid %d (pid %d), not by you (uid %d)" % (path, uid, pid, os.getuid()))


def _connect_ours(path, timeout):
    """A socket connected to the user's own roost at `path`; RoostError `untrusted` (before
    a byte is sent) when it is someone else's, OSError when nothing answers."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        _check_place(path)
        sock.connect(path)
        _check_peer(sock, path)
    except _NotOurs as error:
        sock.close()
        raise RoostError("untrusted", "refusing to talk to %s: %s" % (path, error))
    except BaseException:
        sock.close()
        raise
    return sock


class Reply(object):
    """One delivery. For `on_reply`, a user's reply: `seq`, `text`, `mode` ("steer" or
    "followUp"). For `on_message`, a peer item: `kind` ("message", "report", "notice",
    "digest"), `sender` (the event's `from`) and `relation` too. `data` is the event."""

    __slots__ = ("seq", "text", "mode", "kind", "sender", "relation", "data")

    def __init__(self, event):
        self.seq = event.get("seq")
        text = event.get("text")
        self.text = text if isinstance(text, str) else ""
        self.mode = "steer" if event.get("mode") == "steer" else "followUp"
        self.kind = event.get("kind") or None
        self.sender = event.get("from")
        self.relation = event.get("relation")
        self.data = event

    @property
    def steer(self):
        return self.mode == "steer"

    def __repr__(self):
        return "Reply(seq=%r, kind=%r, mode=%r, text=%r)" % (self.seq, self.kind, self.mode, self.text)


def _encode(value):
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def _cut(value, limit):
    if value is None:
        return None
    value = value if isinstance(value, str) else str(value)
    return value[:limit]


def _is_seq(value):
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def _capabilities_for(on_reply, on_message, extra):
    wanted = ["report"]
    if on_reply is not None:
        wanted.append("replies")
    if on_message is not None:
        wanted += ["agent-items", "peers"]
    for capability in extra or ():
        if isinstance(capability, str) and capability not in wanted:
            wanted.append(capability)
    return wanted


# How the agent is built: RoostAgent is what a script calls. Under it, a _Link owns the
# connection (a writer thread, a reader thread per connection, reconnects with backoff),
# and _Deliveries hands replies and peer items to the handlers on a thread of their own,
# keeping what they finished in agent.json (_ProgressFile). The three share the agent's
# one condition; its lock is reentrant, so a part may call another with it held, and a
# change that spans parts (a stop) is seen by the other threads as one.


class RoostAgent(object):
    """An agent speaking for one roost job. Build it with `from_env`."""

    @classmethod
    def from_env(cls, name, version=None, on_reply=None, on_message=None, capabilities=None, env=None):
        """The agent for the job this process runs in, or None outside a job."""
        env = os.environ if env is None else env
        found = {}
        for key, new_name, old_name in _ENVIRONMENT:
            found[key] = env.get(new_name) or env.get(old_name) or None
        if not (found["job_id"] and found["token"] and found["socket_path"]):
            return None
        return cls(found["job_id"], found["token"], found["socket_path"], job_dir=found["job_dir"],
                   name=name, version=version, on_reply=on_reply, on_message=on_message,
                   capabilities=capabilities)

    def __init__(self, job_id, token, socket_path, job_dir=None, name="agent", version=None,
                 on_reply=None, on_message=None, capabilities=None):
        self.job_id = job_id
        self.name = name
        self.version = version
        self.daemon = None     # the daemon's hello answer (HelloResult), once it gave one
        self.refused = None    # the RoostError that made the agent stop speaking for the job
        self._token = token
        self._socket_path = socket_path
        self._job_dir = job_dir
        self._takes_items = on_message is not None   # peer items (M50): said in every report
        self._capabilities = _capabilities_for(on_reply, on_message, capabilities)
        self._closed = False
        self._cond = threading.Condition()
        self._link = _Link(self._cond, job_id, token, socket_path, hello_args=self._hello_args,
                           on_event=self._on_event, on_hello=self._on_hello, stop_agent=self._stop)
        self._deliveries = _Deliveries(self._cond, job_id, _ProgressFile(job_dir), on_reply, on_message,
                                       ack=self._link.ack)

    # ------------------------------------------------------------------ the caller's API

    def report(self, state, summary=None, question=None, choices=None, status=None,
               waiting_for=None, tool=None, error=None, name=None, model=None, thinking=None,
               context=None, usage=None):
        """Send a full snapshot of the agent's state (what is not given is null). Never
        blocks; the first call connects."""
        if state not in STATES:
            raise ValueError("state must be one of %s, not %r" % (", ".join(STATES), state))
        choices = [_cut(choice, _MAX_CHOICE) for choice in (choices or ())][:_MAX_CHOICES]
        if status is None:
            status = _STATUS_OF_STATE[state]
        if waiting_for is None:
            if state == "blocked":
                if question or choices:
                    waiting_for = "question"
                elif not self._deliveries.handed_any:
                    waiting_for = "first-prompt"
        snapshot = {
            "state": state, "status": status, "waitingFor": waiting_for,
            "summary": _cut(summary, _TEXT_LIMITS["summary"]),
            "question": _cut(question, _TEXT_LIMITS["question"]), "choices": choices,
            "tool": _cut(tool, _TEXT_LIMITS["tool"]), "error": _cut(error, _TEXT_LIMITS["error"]),
            "name": _cut(name, _TEXT_LIMITS["name"]), "model": model, "thinking": thinking,
            "context": context, "usage": usage,
        }
        if self._takes_items:
            snapshot["agentItems"] = True
        # A copy through JSON: what cannot be sent fails here, in the caller's thread, and
        # a dict the caller changes later does not change the report.
        snapshot = json.loads(_encode(snapshot))
        with self._cond:
            if self._link.stopped or self._closed:
                log.debug("report after close or refusal ignored")
                return
            self._link.update_report(snapshot)
            if not self._link.started:
                self._start_threads()

    def request(self, op, args=None, timeout=10.0):
        """Send one op on the job's connection and wait for its result (a dict).

        Raises RoostError (`code` `disconnected` when the connection was lost while
        waiting) or TimeoutError. Needs the connection, made by the first report()."""
        request = _Request(op, dict(args or {}))
        _encode(request.args)   # fails here, in the caller's thread, when it cannot be sent
        with self._cond:
            if self.refused is not None:
                raise RoostError(self.refused.code, self.refused.text)
            if self._closed or self._link.stopped:
                raise RoostError("disconnected", "the agent is closed")
            if not self._link.started:
                raise RoostError("disconnected", "not connected: report() first, it makes the connection")
            self._link.send(request)
        if not request.answered.wait(timeout):
            self._link.withdraw(request)   # an answer that comes later finds no one waiting: dropped
            raise TimeoutError("no answer to %s within %ss" % (op, timeout))
        if request.error is not None:
            raise request.error
        return request.result

    def tasks(self, project=None):
        """The board's tasks this job may see (a list of task dicts, oldest first)."""
        args = {"action": "list"}
        if project is not None:
            args["project"] = project
        return self.request("task", args).get("tasks", [])

    def claim_task(self, task_id):
        """Take a task; returns it. Refusals: blocked, conflict, bad_request, not_found."""
        return self.request("task", {"action": "claim", "id": task_id}).get("task")

    def task_done(self, task_id, result=None):
        args = {"action": "done", "id": task_id}
        if result is not None:
            args["result"] = result
        return self.request("task", args).get("task")

    def release_task(self, task_id):
        return self.request("task", {"action": "release", "id": task_id}).get("task")

    def add_task(self, title, detail=None, after=None):
        """Put a new open task on the board (for this job's project); returns it."""
        args = {"action": "add", "title": title}
        if detail is not None:
            args["detail"] = detail
        if after:
            args["after"] = list(after)
        return self.request("task", args).get("task")

    # The agent-to-agent ops (M43): give on_message to be a peer others may message.
    def peers(self):
        """The sessions this job may message: dicts with id, name, relation, state, ..."""
        return self.request("peers", {}).get("peers") or []

    def send(self, to, message):
        """A message to another session (an id or a name `peers` lists); the SendResult."""
        return self.request("send", {"to": to, "message": message})

    def watch(self, session, when="idle"):
        """Be told once (an on_message `notice`) when `session` is next idle or has ended."""
        return self.request("watch", {"id": session, "when": when})

    def close(self, timeout=2.0):
        """Send the latest report, wait up to `timeout` seconds for it (and for the ack
        of a reply whose handler finishes meanwhile) to be taken, then disconnect."""
        with self._cond:
            if self._closed:
                return
            self._closed = True
            self._deliveries.close()   # nothing more is handed to the handlers
            if self._link.started:
                # Called from a handler, that handler cannot finish first: do not wait for it.
                from_handler = self._deliveries.in_handler_thread()
                deadline = time.monotonic() + timeout
                while not self._link.stopped and not self._settled(from_handler):
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        break
                    self._cond.wait(remaining)
        self._stop()
        self._link.join(1.0)

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()

    @property
    def _running(self):
        """The delivery whose handler runs now, or None (the test agents wait on it)."""
        return self._deliveries.running

    # ------------------------------------------------------------------ between the parts

    def _start_threads(self):
        self._link.start()
        self._deliveries.start()
        # A script that ends without close() still gets its last report through.
        reference = weakref.ref(self)
        atexit.register(_close_at_exit, reference)

    def _hello_args(self):
        """What the hello on each new connection says."""
        hello = {"protocol": PROTOCOL, "agent": {"name": self.name}, "capabilities": self._capabilities}
        if self.version is not None:
            hello["agent"]["version"] = str(self.version)
        return hello

    def _on_hello(self, result):
        self.daemon = result

    def _on_event(self, event):
        """An event from the daemon, on the reader thread."""
        if event.get("event") == "deliver":
            self._deliveries.on_deliver(event)

    def _settled(self, ignore_running=False):
        """Everything close() waits for is done (called with the lock held)."""
        if self._deliveries.running is not None and not ignore_running:
            return False
        return self._link.settled()

    def _stop(self, refusal=None):
        """Stop speaking for the job: on close, when the link fails, or for good after a
        refusal (kept in `refused`)."""
        with self._cond:   # held throughout: no thread sees the link stopped and deliveries still handed over
            if refusal is not None and self.refused is None:
                self.refused = refusal
            self._deliveries.stop()
            self._link.stop(refusal or RoostError("disconnected", "the agent is closed"))


class _Link(object):
    """The job's connection to the daemon. The link thread connects, says hello, then
    writes the latest report and what waits in the outbox (acks, requests); when the
    connection is lost it connects again with backoff. A reader thread per connection
    takes the answers and passes the daemon's events on. Ended for good by stop()."""

    def __init__(self, cond, job_id, token, socket_path, hello_args, on_event, on_hello, stop_agent):
        self._cond = cond
        self._job_id = job_id
        self._token = token
        self._socket_path = socket_path
        self._hello_args = hello_args   # () -> the hello's args, asked on every connection
        self._on_event = on_event       # (event), on the reader thread
        self._on_hello = on_hello       # (the daemon's HelloResult)
        self._stop_agent = stop_agent   # (refusal or None): the link gives up, the agent stops
        self.stopped = False
        self._thread = None
        self._report = None            # the latest snapshot (a dict of JSON values)
        self._generation = 0           # counts report() calls
        self._answered_generation = 0  # the latest report the daemon answered
        self._outbox = collections.deque()   # acks and requests waiting for a registered connection
        self._conn = None
        self._next_id = 0

    # ------------------------------------------------------------------ for the agent

    @property
    def started(self):
        return self._thread is not None

    def start(self):
        self._thread = threading.Thread(target=self._run, name="roost-agent-link", daemon=True)
        self._thread.start()

    def update_report(self, snapshot):
        """The latest snapshot replaces one not yet sent; it goes on every new connection."""
        with self._cond:
            self._report = snapshot
            self._generation += 1
            self._cond.notify_all()

    def send(self, request):
        with self._cond:
            self._outbox.append(request)
            self._cond.notify_all()

    def withdraw(self, request):
        """Take back a request not written yet (its caller stopped waiting)."""
        with self._cond:
            if request in self._outbox:
                self._outbox.remove(request)

    def ack(self, seq, exact):
        """Queue the ack of a delivery: `exact` acks that peer item alone, else it covers
        every reply up to `seq`. Once stopped nothing is acked: the daemon sends it again
        on the next start."""
        args = {"id": self._job_id, "token": self._token, "seq": seq}
        if exact:
            args["exact"] = True
        with self._cond:
            if self.stopped:
                return
            self._outbox.append(_Request("ack", args, self._on_ack))
            self._cond.notify_all()

    def settled(self):
        """The latest report was answered and no ack waits to be written or answered
        (called with the lock held)."""
        if self._answered_generation < self._generation:
            return False
        conn = self._conn
        waiting = list(self._outbox) + (list(conn.in_flight.values()) if conn else [])
        return not any(request.op == "ack" for request in waiting)

    def stop(self, failure):
        """For good: what waits in the outbox fails with `failure`; the connection is shut."""
        with self._cond:
            self.stopped = True
            conn = self._conn
            while self._outbox:
                self._outbox.popleft().fail(failure)
            self._cond.notify_all()
        if conn is not None:
            conn.shut()

    def join(self, timeout):
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    # ------------------------------------------------------------------ the link thread

    def _wait_stopped(self, seconds):
        deadline = time.monotonic() + seconds
        with self._cond:
            while not self.stopped:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self._cond.wait(remaining)
            return self.stopped

    def _run(self):
        delay = 0.0
        try:
            while not self._wait_stopped(delay):
                conn = self._connect()
                registered = False
                if conn is not None:
                    try:
                        self._serve(conn)
                    finally:
                        registered = conn.registered
                        self._drop(conn)
                delay = 0.0 if registered else min(max(delay * 2, _BACKOFF_FIRST), _BACKOFF_MAX)
        except Exception:
            log.exception("the connection thread failed")
            self._stop_agent(None)

    def _connect(self):
        try:
            sock = _connect_ours(self._socket_path, _CONNECT_TIMEOUT)
            sock.settimeout(_IO_TIMEOUT)
        except RoostError as refusal:
            # Someone else's socket: never worth another try, nothing is sent to it.
            log.error("%s", refusal.text)
            self._stop_agent(refusal)
            return None
        except OSError as error:
            log.debug("cannot reach the daemon at %s: %s", self._socket_path, error)
            return None
        conn = _Connection(sock)
        with self._cond:
            if self.stopped:
                conn.shut()
                return None
            self._conn = conn
        threading.Thread(target=self._run_reader, args=(conn,), name="roost-agent-reader", daemon=True).start()
        log.debug("connected to %s", self._socket_path)
        return conn

    def _serve(self, conn):
        """Write on one connection until it dies or the link stops: hello first, then the
        latest report; once a report is accepted, acks and requests ahead of any newer report."""
        self._write(conn, [_Request("hello", self._hello_args(), self._on_hello_answer)])
        while True:
            with self._cond:
                batch = []
                while not batch:
                    if conn.dead or self.stopped:
                        return
                    wait = None
                    # Acks before the report: a report made after a handler returned
                    # must not reach the daemon ahead of that handler's ack.
                    if conn.registered:
                        while self._outbox:
                            batch.append(self._outbox.popleft())
                    if not conn.report_waiting and conn.sent_generation < self._generation:
                        if conn.retry_report_at is not None and conn.retry_report_at > time.monotonic():
                            wait = conn.retry_report_at - time.monotonic()
                        else:
                            batch.append(self._report_request(conn))
                    if not batch:
                        self._cond.wait(wait)
            self._write(conn, batch)

    def _report_request(self, conn):
        generation = self._generation
        conn.report_waiting = True
        conn.sent_generation = generation
        conn.retry_report_at = None
        args = {"id": self._job_id, "token": self._token, "report": self._report}
        return _Request("report", args, lambda request: self._on_report(conn, generation, request))

    def _write(self, conn, requests):
        lines = []
        with self._cond:
            for request in requests:
                self._next_id += 1
                conn.in_flight[self._next_id] = request
                lines.append(_encode({"id": self._next_id, "op": request.op, "args": request.args}))
        data = ("\n".join(lines) + "\n").encode("utf-8", "replace")
        try:
            conn.sock.sendall(data, _SEND_FLAGS)
        except OSError as error:
            log.debug("write failed: %s", error)
            self._mark_dead(conn)

    def _mark_dead(self, conn):
        with self._cond:
            conn.dead = True
            self._cond.notify_all()
        conn.shut()

    def _drop(self, conn):
        """The connection is over: what waited for an answer on it learns so."""
        self._mark_dead(conn)
        with self._cond:
            if self._conn is conn:
                self._conn = None
            lost = list(conn.in_flight.values())
            conn.in_flight.clear()
            for request in lost:
                # Acks need no resend: the daemon sends every pending reply again on the next
                # connection, and a finished one is acked again then.
                if request.on_answer is None:
                    request.fail(RoostError("disconnected", "the connection to roost was lost"))
            self._cond.notify_all()

    # ------------------------------------------------------------------ the reader thread

    def _run_reader(self, conn):
        try:
            for message in conn.messages():
                self._on_message(conn, message)
        except OSError:
            pass
        except Exception:
            log.exception("reading from the daemon failed")
        finally:
            self._mark_dead(conn)

    def _on_message(self, conn, message):
        if "event" in message:
            self._on_event(message)
            return
        with self._cond:
            request = conn.in_flight.pop(message.get("id"), None) if isinstance(message.get("id"), int) else None
        if request is None:
            return
        if message.get("ok") is True:
            result = message.get("result")
            request.result = result if isinstance(result, dict) else {}
        else:
            request.error = RoostError(str(message.get("code") or "internal"), str(message.get("error") or "refused"))
        if request.on_answer is not None:
            request.on_answer(request)
        request.answered.set()
        with self._cond:
            self._cond.notify_all()

    # ------------------------------------------------------------------ answers to its own ops

    def _on_hello_answer(self, request):
        if request.error is None:
            self._on_hello(request.result)
        else:
            # A daemon from before M31 does not know hello: go on with version 1.
            log.debug("hello refused (%s): going on with protocol 1", request.error)

    def _on_report(self, conn, generation, request):
        error = request.error
        if error is not None and error.code in _FATAL_CODES:
            log.warning("roost refused the report (%s): no longer speaking for job %s", error, self._job_id)
            self._stop_agent(error)
            return
        with self._cond:
            conn.report_waiting = False
            if error is None:
                conn.registered = True
            elif error.code == "busy":
                conn.sent_generation = min(conn.sent_generation, generation - 1)
                conn.retry_report_at = time.monotonic() + _BUSY_RETRY
            else:
                log.warning("roost did not take the report: %s", error)
            if error is None or error.code != "busy":
                self._answered_generation = max(self._answered_generation, generation)
            self._cond.notify_all()

    def _on_ack(self, request):
        error = request.error
        if error is None:
            return
        if error.code in _FATAL_CODES:
            log.warning("roost refused an ack (%s): no longer speaking for job %s", error, self._job_id)
            self._stop_agent(error)
        else:
            log.warning("roost refused an ack: %s", error)


class _Request(object):
    """One request on the wire; `answered` is set with `result` or `error`."""

    __slots__ = ("op", "args", "on_answer", "answered", "result", "error")

    def __init__(self, op, args, on_answer=None):
        self.op = op
        self.args = args
        self.on_answer = on_answer   # called on the reader thread, for the client's own ops
        self.answered = threading.Event()
        self.result = None
        self.error = None

    def fail(self, error):
        self.error = error
        self.answered.set()


class _Connection(object):
    """One connection to the daemon: its socket, and what the link knows about it."""

    def __init__(self, sock):
        self.sock = sock
        self.dead = False
        self.registered = False       # a report of ours was accepted on it
        self.report_waiting = False   # a report is on its way, unanswered
        self.sent_generation = 0      # the latest report generation written on it
        self.retry_report_at = None   # after `busy`
        self.in_flight = {}           # request id -> _Request

    def messages(self):
        """The daemon's messages (JSON objects), as they come, until the connection ends.
        Raises OSError when the socket fails."""
        pending = b""
        while True:
            try:
                chunk = self.sock.recv(65536)
            except socket.timeout:
                continue
            if not chunk:
                return
            pending += chunk
            if b"\n" not in chunk:
                if len(pending) > _MAX_LINE:
                    log.warning("a line from the daemon over %d bytes: dropping the connection", _MAX_LINE)
                    return
                continue
            lines = pending.split(b"\n")
            pending = lines.pop()
            for line in lines:
                if not line.strip():
                    continue
                try:
                    message = json.loads(line.decode("utf-8", "replace"))
                except ValueError:
                    log.warning("not JSON from the daemon: %r", line[:200])
                    continue
                if isinstance(message, dict):
                    yield message

    def shut(self):
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        try:
            self.sock.close()
        except OSError:
            pass


class _Deliveries(object):
    """Replies (and peer items) handed to their handler once each, in seq order, one at a
    time, on the handler thread; each finished one is kept in agent.json, then acked."""

    def __init__(self, cond, job_id, progress, on_reply, on_message, ack):
        self._cond = cond
        self._job_id = job_id
        self._progress = progress
        self._on_reply = on_reply
        self._on_message = on_message
        self._ack = ack                 # (seq, exact): queue the ack of a finished delivery
        self._queue = queue.Queue()     # deliveries for the handler thread; None ends it
        self._thread = None
        self._closing = False           # nothing more is handed over (close() or a stop)
        self.running = None             # the delivery whose handler runs now
        self._finished_seq, self._finished_items = progress.load()
        self._queued_seq = self._finished_seq
        self._queued_items = set(self._finished_items)
        self.handed_any = self._finished_seq > 0   # for report()'s "first-prompt"

    # ------------------------------------------------------------------ for the agent

    def start(self):
        if self._on_reply is not None or self._on_message is not None:
            self._thread = threading.Thread(target=self._run, name="roost-agent-handler", daemon=True)
            self._thread.start()

    def in_handler_thread(self):
        return threading.current_thread() is self._thread

    def close(self):
        """Hand nothing more over; a handler running now may still finish and be acked."""
        with self._cond:
            self._closing = True

    def stop(self):
        """Hand nothing more over and end the handler thread once its handler returns."""
        with self._cond:
            self._closing = True
        self._queue.put(None)

    def on_deliver(self, event):
        """A `deliver` event, on the reader thread (the spec's "Replies")."""
        if not _is_seq(event.get("seq")):
            return
        if event.get("id") not in (None, self._job_id):
            return
        delivery = Reply(event)
        with self._cond:
            if self._closing:
                return   # not handed over: it comes again on the next start
            if delivery.kind is not None:
                if self._on_message is None:
                    return
                if delivery.seq in self._finished_items:
                    self._ack(delivery.seq, exact=True)
                    return
                if delivery.seq in self._queued_items:
                    return
                self._queued_items.add(delivery.seq)
            else:
                if self._on_reply is None:
                    return
                if delivery.seq <= self._finished_seq:
                    self._ack(delivery.seq, exact=False)   # finished before: ack only
                    return
                if delivery.seq <= self._queued_seq:
                    return   # a resend of one waiting or running: acked when it finishes
                self._queued_seq = delivery.seq
        self._queue.put(delivery)

    # ------------------------------------------------------------------ the handler thread

    def _run(self):
        while True:
            delivery = self._queue.get()
            if delivery is None:
                return
            with self._cond:
                if self._closing:
                    continue
                self.running = delivery
                self.handed_any = True
            handler = self._on_message if delivery.kind is not None else self._on_reply
            try:
                handler(delivery)
            except BaseException:
                log.exception("the handler of delivery %s raised; it counts as handled", delivery.seq)
            self._finish(delivery)

    def _finish(self, delivery):
        """Keep the delivery's seq in agent.json, then ack it (the spec: "before its ack").

        After close() it is still kept but not acked: the daemon sends it again on the
        next start, and that start only acks it, as finished work is never redone."""
        with self._cond:
            finished_seq = self._finished_seq
            items = list(self._finished_items)
        if delivery.kind is not None:
            items = (items + [delivery.seq])[-_KEPT_ITEM_SEQS:]
        else:
            finished_seq = max(finished_seq, delivery.seq)
        self._progress.save(finished_seq, items)
        with self._cond:
            self._finished_seq = finished_seq
            self._finished_items = items
            self.running = None
            self._ack(delivery.seq, exact=delivery.kind is not None)   # not once stopped
            self._cond.notify_all()


class _ProgressFile(object):
    """`$ROOST_JOB_DIR/agent.json`: the last finished reply (`lastSeq`) and the last peer
    items finished (`itemSeqs`); keys others wrote are kept. Without a job directory
    nothing is kept."""

    def __init__(self, job_dir):
        self.path = os.path.join(job_dir, _STATE_FILE) if job_dir else None

    def load(self):
        """(last finished seq, finished item seqs) as the file has them."""
        data = self._read()
        last = data.get("lastSeq")
        items = data.get("itemSeqs")
        last = last if _is_seq(last) else 0
        items = [seq for seq in items if _is_seq(seq)] if isinstance(items, list) else []
        return last, items[-_KEPT_ITEM_SEQS:]

    def save(self, finished_seq, items):
        if self.path is None:
            return
        data = self._read()   # keeps keys others wrote
        version = data.get("version")
        data["version"] = version if _is_seq(version) and version > _STATE_VERSION else _STATE_VERSION
        data["lastSeq"] = finished_seq
        data["itemSeqs"] = items
        try:
            _write_atomically(self.path, (_encode(data) + "\n").encode("utf-8"))
        except OSError as error:
            # Acked all the same: the ack is what keeps the daemon from sending it again.
            log.error("cannot write %s: %s", self.path, error)

    def _read(self):
        path = self.path
        if path is None:
            return {}
        try:
            with open(path, "rb") as handle:
                data = json.loads(handle.read().decode("utf-8"))
            if not isinstance(data, dict):
                raise ValueError("not a JSON object")
            return data
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as error:
            log.warning("%s is damaged (%s): set aside, starting from nothing", path, error)
            try:
                os.replace(path, "%s.corrupt-%d" % (path, int(time.time() * 1000)))
            except OSError:
                pass
            return {}


def _write_atomically(path, data):
    """Temp file of a random name in the same directory (O_EXCL | O_NOFOLLOW: a link
    planted at a name never takes the write), fsync, rename over, fsync the directory.
    A copy of roost.unix.files.write_atomic with the same checks: this file must stay
    one standard-library file (tests/test_atomic_writes.py runs both on the same plants)."""
    directory = os.path.dirname(path) or "."
    for _attempt in range(8):
        temp = os.path.join(directory, ".%s.%s.tmp" % (os.path.basename(path), os.urandom(6).hex()))
        try:
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
            break
        except FileExistsError:
            log.warning("%s was there already (planted?): another name is drawn", temp)
    else:
        raise FileExistsError("no free temp name for %s in %s" % (os.path.basename(path), directory))
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp, path)
    except BaseException:
        try:
            os.unlink(temp)
        except OSError:
            pass
        raise
    dir_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def _close_at_exit(reference):
    agent = reference()
    if agent is not None:
        try:
            agent.close(timeout=1.0)
        except Exception:
            log.exception("closing at exit failed")


class RoostPeer(object):
    """A process roost did not start, joined as a peer (`peer_register`) for as long as its
    connection lasts: it lists, messages and watches sessions; messages to it go to
    `on_message(reply)` on a thread of their own, each acked (`peer_ack`) once handled."""

    def __init__(self, sock, on_message):
        self._conn = _Connection(sock)
        self._lock = threading.Lock()
        self._waiting = {}
        self._next_id = 0
        self._on_message = on_message
        self._items = collections.deque()
        self._wake = threading.Condition(self._lock)
        self.id = None
        threading.Thread(target=self._read, name="roost-peer-reader", daemon=True).start()
        threading.Thread(target=self._handle, name="roost-peer-handler", daemon=True).start()

    @classmethod
    def register(cls, name, cwd=None, socket_path=None, on_message=None, env=None):
        """Connect and join; RoostError when refused, OSError when no daemon answers."""
        env = os.environ if env is None else env
        if socket_path is None:
            home = env.get("ROOST_HOME") or os.path.join(
                env.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state"), "roost")
            socket_path = env.get("ROOST_SOCKET") or os.path.join(home, "roost.sock")
        sock = _connect_ours(socket_path, _CONNECT_TIMEOUT)
        sock.settimeout(None)
        peer = cls(sock, on_message)
        peer.id = peer.request("peer_register", {"name": name, "cwd": cwd or os.getcwd(), "pid": os.getpid()})["id"]
        return peer

    def request(self, op, args=None, timeout=10.0):
        request = _Request(op, args or {})
        with self._lock:
            self._next_id += 1
            self._waiting[self._next_id] = request
            line = _encode({"id": self._next_id, "op": op, "args": request.args}) + "\n"
        try:
            self._conn.sock.sendall(line.encode("utf-8"), _SEND_FLAGS)
        except OSError:
            raise RoostError("disconnected", "the connection to roost was lost")
        if not request.answered.wait(timeout):
            raise TimeoutError("roost did not answer %s within %s s" % (op, timeout))
        if request.error is not None:
            raise request.error
        return request.result

    def peers(self):
        return self.request("peers").get("peers") or []

    def send(self, to, message):
        return self.request("send", {"to": to, "message": message})

    def watch(self, session, when="idle"):
        return self.request("watch", {"id": session, "when": when})

    def close(self):
        self._conn.shut()

    def _read(self):
        try:
            for message in self._conn.messages():
                if message.get("event") == "deliver":
                    with self._lock:
                        self._items.append(message)
                        self._wake.notify()
                    continue
                with self._lock:
                    request = self._waiting.pop(message.get("id"), None)
                if request is not None:
                    result = message.get("result")
                    request.result = result if isinstance(result, dict) else {}
                    if message.get("ok") is not True:
                        request.error = RoostError(str(message.get("code") or "internal"), str(message.get("error")))
                    request.answered.set()
        except OSError:
            pass
        finally:
            self._conn.dead = True
            with self._lock:
                for request in self._waiting.values():
                    request.fail(RoostError("disconnected", "the connection to roost was lost"))
                self._waiting.clear()
                self._wake.notify()

    def _handle(self):
        while True:
            with self._lock:
                while not self._items and not self._conn.dead:
                    self._wake.wait()
                if not self._items:
                    return
                event = self._items.popleft()
            try:
                if self._on_message is not None:
                    self._on_message(Reply(event))
            except Exception:
                log.exception("on_message failed")
            try:
                self.request("peer_ack", {"ref": event.get("ref")})
            except (RoostError, TimeoutError) as error:
                log.debug("peer_ack: %s", error)
