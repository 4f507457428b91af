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
  helpers (`tasks`, `claim_task`, `task_done`, `release_task`, `add_task`) use it.

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
import tempfile
import threading
import time
import weakref

__all__ = ["RoostAgent", "RoostError", "Reply", "PROTOCOL"]
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


class Reply(object):
    """One delivery. For `on_reply`, a user's reply: `seq`, `text`, `mode` ("steer" or
    "followUp"). For `on_message`, a peer item: `kind` ("message", "report", "notice",
    "digest"), `sender` (the event's `from`) and `relation` too. `data` is the event."""

    __slots__ = ("seq", "text", "mode", "kind", "sender", "relation", "data")

    def __init__(self, event):
        self.seq = event["seq"]
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


class _Connection(object):
    def __init__(self, sock):
        self.sock = sock
        self.dead = False
        self.registered = False       # a report of ours was accepted on it
        self.report_waiting = False   # a report is on its way, unanswered
        self.sent_generation = 0      # the latest report generation written on it
        self.retry_report_at = None   # after `busy`
        self.in_flight = {}           # request id -> _Request

    def shut(self):
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        try:
            self.sock.close()
        except OSError:
            pass


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
        self._on_reply = on_reply
        self._on_message = on_message
        self._capabilities = self._capabilities_for(capabilities)
        self._cond = threading.Condition()
        self._report = None            # the latest snapshot (a dict of JSON values)
        self._generation = 0           # counts report() calls
        self._answered_generation = 0  # the latest report the daemon answered
        self._outbox = collections.deque()   # acks and requests waiting for a registered connection
        self._conn = None
        self._next_id = 0
        self._link = None
        self._handler_thread = None
        self._closed = False
        self._closing = False
        self._stopped = False
        self._running = None           # the delivery whose handler runs now
        self._deliveries = queue.Queue()
        self._finished_seq, self._finished_items = self._load_progress()
        self._queued_seq = self._finished_seq
        self._queued_items = set(self._finished_items)
        self._handed_any = self._finished_seq > 0

    def _capabilities_for(self, extra):
        wanted = ["report"]
        if self._on_reply is not None:
            wanted.append("replies")
        if self._on_message is not None:
            wanted += ["agent-items", "peers"]
        for capability in extra or ():
            if isinstance(capability, str) and capability not in wanted:
                wanted.append(capability)
        return wanted

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
                elif not self._handed_any:
                    waiting_for = "first-prompt"
        snapshot = {
            "state": state, "status": status, "waitingFor": waiting_for,
            "summary": _cut(summary, _TEXT_LIMITS["summary"]),
            "question": _cut(question, _TEXT_LIMITS["question"]), "choices": choices,
            "tool": _cut(tool, _TEXT_LIMITS["tool"]), "error": _cut(error, _TEXT_LIMITS["error"]),
            "name": _cut(name, _TEXT_LIMITS["name"]), "model": model, "thinking": thinking,
            "context": context, "usage": usage,
        }
        if self._on_message is not None:
            snapshot["agentItems"] = True
        # A copy through JSON: what cannot be sent fails here, in the caller's thread, and
        # a dict the caller changes later does not change the report.
        snapshot = json.loads(_encode(snapshot))
        with self._cond:
            if self._stopped or self._closed:
                log.debug("report after close or refusal ignored")
                return
            self._report = snapshot
            self._generation += 1
            if self._link is None:
                self._start_threads()
            self._cond.notify_all()

    def request(self, op, args=None, timeout=10.0):
        """Send one op on the job's connection and wait for its result (a dict).

        Raises RoostError (`code` `disconnected` when the connection was lost while
        waiting) or TimeoutError. Needs the connection, made by the first report()."""
        request = _Request(op, dict(args or {}))
        _encode(request.args)   # fails here, in the caller's thread, when it cannot be sent
        with self._cond:
            if self.refused is not None:
                raise RoostError(self.refused.code, self.refused.text)
            if self._closed or self._stopped:
                raise RoostError("disconnected", "the agent is closed")
            if self._link is None:
                raise RoostError("disconnected", "not connected: report() first, it makes the connection")
            self._outbox.append(request)
            self._cond.notify_all()
        if not request.answered.wait(timeout):
            with self._cond:   # an answer that comes later finds no one waiting: dropped
                if request in self._outbox:
                    self._outbox.remove(request)
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

    def close(self, timeout=2.0):
        """Send the latest report, wait up to `timeout` seconds for it (and for the ack
        of a reply whose handler finishes meanwhile) to be taken, then disconnect."""
        with self._cond:
            if self._closed:
                return
            self._closed = True
            self._closing = True   # nothing more is handed to the handlers
            if self._link is not None:
                # Called from a handler, that handler cannot finish first: do not wait for it.
                from_handler = threading.current_thread() is self._handler_thread
                deadline = time.monotonic() + timeout
                while not self._stopped and not self._settled(from_handler):
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        break
                    self._cond.wait(remaining)
        self._stop()
        link = self._link
        if link is not None and link is not threading.current_thread():
            link.join(1.0)

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()

    # ------------------------------------------------------------------ threads

    def _start_threads(self):
        self._link = threading.Thread(target=self._run_link, name="roost-agent-link", daemon=True)
        self._link.start()
        if self._on_reply is not None or self._on_message is not None:
            self._handler_thread = threading.Thread(target=self._run_handlers, name="roost-agent-handler",
                                                    daemon=True)
            self._handler_thread.start()
        # A script that ends without close() still gets its last report through.
        reference = weakref.ref(self)
        atexit.register(_close_at_exit, reference)

    def _settled(self, ignore_running=False):
        """Everything close() waits for is done (called with the lock held)."""
        if self._running is not None and not ignore_running:
            return False
        if self._answered_generation < self._generation:
            return False
        conn = self._conn
        waiting = list(self._outbox) + (list(conn.in_flight.values()) if conn else [])
        return not any(request.op == "ack" for request in waiting)

    def _stop(self, refusal=None):
        with self._cond:
            if refusal is not None and self.refused is None:
                self.refused = refusal
            self._stopped = True
            self._closing = True
            conn = self._conn
            failure = refusal or RoostError("disconnected", "the agent is closed")
            while self._outbox:
                self._fail(self._outbox.popleft(), failure)
            self._cond.notify_all()
        self._deliveries.put(None)
        if conn is not None:
            conn.shut()

    def _wait_stopped(self, seconds):
        deadline = time.monotonic() + seconds
        with self._cond:
            while not self._stopped:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self._cond.wait(remaining)
            return self._stopped

    def _run_link(self):
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
            self._stop()

    def _connect(self):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(_CONNECT_TIMEOUT)
        try:
            sock.connect(self._socket_path)
            sock.settimeout(_IO_TIMEOUT)
        except OSError as error:
            sock.close()
            log.debug("cannot reach the daemon at %s: %s", self._socket_path, error)
            return None
        conn = _Connection(sock)
        with self._cond:
            if self._stopped:
                conn.shut()
                return None
            self._conn = conn
        threading.Thread(target=self._run_reader, args=(conn,), name="roost-agent-reader", daemon=True).start()
        log.debug("connected to %s", self._socket_path)
        return conn

    def _serve(self, conn):
        """Write on one connection until it dies or the agent stops: hello first, then the
        latest report; once a report is accepted, acks and requests ahead of any newer report."""
        hello = {"protocol": PROTOCOL, "agent": {"name": self.name}, "capabilities": self._capabilities}
        if self.version is not None:
            hello["agent"]["version"] = str(self.version)
        self._write(conn, [_Request("hello", hello, self._on_hello)])
        while True:
            with self._cond:
                batch = []
                while not batch:
                    if conn.dead or self._stopped:
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
        args = {"id": self.job_id, "token": self._token, "report": self._report}
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
                    self._fail(request, RoostError("disconnected", "the connection to roost was lost"))
            self._cond.notify_all()

    def _fail(self, request, error):
        request.error = error
        request.answered.set()

    def _run_reader(self, conn):
        pending = b""
        try:
            while True:
                try:
                    chunk = conn.sock.recv(65536)
                except socket.timeout:
                    continue
                if not chunk:
                    break
                pending += chunk
                if b"\n" not in chunk:
                    if len(pending) > _MAX_LINE:
                        log.warning("a line from the daemon over %d bytes: dropping the connection", _MAX_LINE)
                        break
                    continue
                lines = pending.split(b"\n")
                pending = lines.pop()
                for line in lines:
                    if line.strip():
                        self._on_line(conn, line)
        except OSError:
            pass
        except Exception:
            log.exception("reading from the daemon failed")
        finally:
            self._mark_dead(conn)

    def _on_line(self, conn, line):
        try:
            message = json.loads(line.decode("utf-8", "replace"))
        except ValueError:
            log.warning("not JSON from the daemon: %r", line[:200])
            return
        if not isinstance(message, dict):
            return
        if "event" in message:
            if message.get("event") == "deliver":
                self._on_deliver(message)
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

    # ------------------------------------------------------------------ answers to our own ops

    def _on_hello(self, request):
        if request.error is None:
            self.daemon = request.result
        else:
            # A daemon from before M31 does not know hello: go on with version 1.
            log.debug("hello refused (%s): going on with protocol 1", request.error)

    def _on_report(self, conn, generation, request):
        error = request.error
        if error is not None and error.code in _FATAL_CODES:
            log.warning("roost refused the report (%s): no longer speaking for job %s", error, self.job_id)
            self._stop(refusal=error)
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
            log.warning("roost refused an ack (%s): no longer speaking for job %s", error, self.job_id)
            self._stop(refusal=error)
        else:
            log.warning("roost refused an ack: %s", error)

    def _queue_ack(self, seq, exact):
        args = {"id": self.job_id, "token": self._token, "seq": seq}
        if exact:
            args["exact"] = True
        self._outbox.append(_Request("ack", args, self._on_ack))
        self._cond.notify_all()

    # ------------------------------------------------------------------ deliveries

    def _on_deliver(self, event):
        if not _is_seq(event.get("seq")):
            return
        if event.get("id") not in (None, self.job_id):
            return
        delivery = Reply(event)
        with self._cond:
            if self._closing:
                return   # not handed over: it comes again on the next start
            if delivery.kind is not None:
                if self._on_message is None:
                    return
                if delivery.seq in self._finished_items:
                    self._queue_ack(delivery.seq, exact=True)
                    return
                if delivery.seq in self._queued_items:
                    return
                self._queued_items.add(delivery.seq)
            else:
                if self._on_reply is None:
                    return
                if delivery.seq <= self._finished_seq:
                    self._queue_ack(delivery.seq, exact=False)   # finished before: ack only
                    return
                if delivery.seq <= self._queued_seq:
                    return   # a resend of one waiting or running: acked when it finishes
                self._queued_seq = delivery.seq
        self._deliveries.put(delivery)

    def _run_handlers(self):
        while True:
            delivery = self._deliveries.get()
            if delivery is None:
                return
            with self._cond:
                if self._closing:
                    continue
                self._running = delivery
                self._handed_any = True
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
        self._save_progress(finished_seq, items)
        with self._cond:
            self._finished_seq = finished_seq
            self._finished_items = items
            self._running = None
            if not self._stopped:
                self._queue_ack(delivery.seq, exact=delivery.kind is not None)
            self._cond.notify_all()

    # ------------------------------------------------------------------ agent.json

    def _progress_path(self):
        return os.path.join(self._job_dir, _STATE_FILE) if self._job_dir else None

    def _read_progress_file(self):
        path = self._progress_path()
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

    def _load_progress(self):
        data = self._read_progress_file()
        last = data.get("lastSeq")
        items = data.get("itemSeqs")
        last = last if _is_seq(last) else 0
        items = [seq for seq in items if _is_seq(seq)] if isinstance(items, list) else []
        return last, items[-_KEPT_ITEM_SEQS:]

    def _save_progress(self, finished_seq, items):
        path = self._progress_path()
        if path is None:
            return
        data = self._read_progress_file()   # keeps keys others wrote
        version = data.get("version")
        data["version"] = version if _is_seq(version) and version > _STATE_VERSION else _STATE_VERSION
        data["lastSeq"] = finished_seq
        data["itemSeqs"] = items
        try:
            _write_atomically(path, (_encode(data) + "\n").encode("utf-8"))
        except OSError as error:
            # Acked all the same: the ack is what keeps the daemon from sending it again.
            log.error("cannot write %s: %s", path, error)


def _write_atomically(path, data):
    """Temp file in the same directory, fsync, rename over, fsync the directory."""
    directory = os.path.dirname(path) or "."
    fd, temp = tempfile.mkstemp(prefix=".agent.json.", dir=directory)   # 0600
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, path)
    except BaseException:
        try:
            os.unlink(temp)
        except OSError:
            pass
        raise
    dir_fd = os.open(directory, os.O_RDONLY)
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
