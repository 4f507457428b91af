"""A job's terminal over the socket: peek, keys, and attach with its follow-ups
(attach-input, attach-resize, detach). These are roost's own ops, for a person only.

An attach answers `{id, name, detachKey}`; the connection then carries
`{"event": "output", "id", "data": base64}` (first a repaint of the screen as it stands,
then the live bytes) until `{"event": "detached", "id", "why"}`. The client sends its
keys with `attach-input {id, data}`, its window size with `attach-resize {id, rows,
cols}` and leaves with `detach {id}`; a connection that closes detaches too.
"""

import base64
import binascii
import logging
import time

import gevent

from roost.contract import REQUIRED, Flag, Integer, ListOf, Text
from roost.errors import BAD_REQUEST, UNSUPPORTED, RoostError, bad_request
from roost.ops import op
from roost.ops.jobs import FINDS, JOB, STARTS
from roost.term.keys import UnknownKey
from roost.term.output_log import read_tail
from roost.term.reading import shows_dialog
from roost.term.screen.screen import MAX_SIZE, Screen

log = logging.getLogger(__name__)

MAX_PEEK_LINES = 1000
DEFAULT_DETACH_KEY = "^q"
PEEK_LOG_TAIL = 32 * 1024        # an ended job's screen is rebuilt from this much log
WAKE_TIMEOUT = 15.0
UNSENT_LIMIT = 4 * 1024 * 1024   # an attacher this far behind is let go
MAX_KEYS = 100
ROWS = Integer("The window's rows (with cols).", minimum=1, maximum=MAX_SIZE, default=None)
COLS = Integer("The window's columns (with rows).", minimum=1, maximum=MAX_SIZE, default=None)
ATTACHED = Text("A job this connection is attached to (its id as attach answered).", min_length=1)


class AttachSink:
    """One attacher as a Terminal sees it: output goes out as events on its session.
    The session holds it (session.attachments) and releases it when it closes."""

    def __init__(self, session, job_id, terminal):
        self.session = session
        self.job_id = job_id
        self.terminal = terminal
        self.gone = False

    def write_output(self, data):
        if self.gone or self.session.gone:
            return False
        if self.session.unsent > UNSENT_LIMIT:
            return False
        self.session.send_event({"event": "output", "id": self.job_id,
                                 "data": base64.b64encode(data).decode("ascii")})
        return not self.session.gone

    def end(self, why):
        """The terminal let this attacher go (the job ended, it fell behind, ...)."""
        if self.gone:
            return
        self.gone = True
        if self.session.attachments.get(self.job_id) is self:
            del self.session.attachments[self.job_id]
        if not self.session.gone:
            self.session.send_event({"event": "detached", "id": self.job_id, "why": why})

    def release(self):
        """The attacher leaves (detach, a new attach of the same job, its connection closed)."""
        self.gone = True
        if self.session.attachments.get(self.job_id) is self:
            del self.session.attachments[self.job_id]
        self.terminal.detach(self)


def _find(call):
    return call.services.jobs.resolve(call.args["id"])


def _size(call):
    rows, cols = call.args["rows"], call.args["cols"]
    if (rows is None) != (cols is None):
        raise bad_request("rows and cols go together")
    return rows, cols


def detach_key(config):
    """roost.json's `attach.detachKey` (default ^q, as in the peer tools)."""
    try:
        section = config.get("attach")
    except Exception:
        log.exception("reading roost.json for attach.detachKey")
        section = None
    key = section.get("detachKey") if isinstance(section, dict) else None
    return key if isinstance(key, str) and key else DEFAULT_DETACH_KEY


@op("peek", args={"id": JOB, "lines": Integer(f"The last lines of its screen (at most {MAX_PEEK_LINES}).", minimum=1,
                                                 default=None)},
    result={"id": Text(), "text": Text("Its screen as text (an ended job's rebuilt from its log).")}, codes=FINDS)
def peek(call):
    job = _find(call)
    lines = call.args["lines"]
    if lines is not None:
        lines = min(lines, MAX_PEEK_LINES)
    terminal = job.terminal
    if terminal is not None:
        text = terminal.text(lines)
    else:
        text = _screen_from_log(call.services.jobs.job_dir(job), lines)
    return {"id": job.id, "text": text}


def _screen_from_log(job_dir, lines):
    """An ended job's screen, rebuilt from the end of its log (fed in slices, yielding)."""
    tail = read_tail(job_dir, PEEK_LOG_TAIL)
    screen = Screen(40, 120)
    for offset in range(0, len(tail), 2048):
        screen.feed(tail[offset:offset + 2048])
        gevent.sleep(0)
    return screen.text(lines)


@op("attach", args={"id": JOB, "rows": ROWS, "cols": COLS},
    result={"id": Text(), "name": Text(), "detachKey": Text("The key that leaves (roost.json's attach.detachKey).")},
    codes=FINDS + (UNSUPPORTED,) + STARTS)
def attach(call):
    job = _find(call)
    rows, cols = _size(call)
    if not _live(job.terminal) and job.record.get("reaped"):
        # DM-4: attaching to a job stopped for idleness starts it again.
        call.services.runner.wake(job)
        deadline = time.monotonic() + WAKE_TIMEOUT
        while not _live(job.terminal) and time.monotonic() < deadline:
            gevent.sleep(0.02)
    terminal = job.terminal
    if not _live(terminal):
        raise RoostError(UNSUPPORTED, f"job {job.id} has no live terminal (it has ended); "
                                        "respawn it to attach")
    session = call.session
    earlier = session.attachments.get(job.id)
    if earlier is not None:
        earlier.release()
    if rows is not None:
        terminal.resize(rows, cols)
    sink = AttachSink(session, job.id, terminal)
    session.attachments[job.id] = sink
    # Joined after this answer has gone out, so the repaint follows the answer.
    gevent.spawn(_join, terminal, sink)
    return {"id": job.id, "name": job.name, "detachKey": detach_key(call.services.config)}


def _live(terminal):
    return terminal is not None and not terminal.closed and not terminal.eof.is_set()


def _join(terminal, sink):
    if sink.gone or sink.session.gone:
        return
    if not _live(terminal):
        sink.end("the job ended")
        return
    terminal.attach(sink)


def _attached(call):
    job_id = call.args["id"]
    sink = call.session.attachments.get(job_id)
    if sink is None:
        raise bad_request(f"not attached to {job_id} on this connection")
    return sink


@op("attach-input", quick=True, args={"id": ATTACHED, "data": Text("The keys' bytes, base64.")},
    result={"id": Text(), "taken": Flag("False: the terminal is gone, or this attacher fell behind.")},
    codes=(BAD_REQUEST,))
def attach_input(call):
    sink = _attached(call)
    encoded = call.args["data"]
    try:
        data = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        raise bad_request("data must be base64")
    taken = sink.terminal.write_input(data, sink)
    return {"id": sink.job_id, "taken": taken}


@op("keys", args={"id": JOB, "keys": ListOf(Text(), f"1 to {MAX_KEYS} key names (Down, Enter, C-c, ...).")},
    result={"id": Text(), "taken": Flag()}, codes=FINDS + (UNSUPPORTED,))
def send_keys(call):
    """roost's own: keys that are not text (Down, Enter, C-c, ...) into a job's terminal,
    as a person presses them to answer a dialog; typed at once, whatever the screen."""
    job = _find(call)
    names = call.args["keys"]
    if not names or len(names) > MAX_KEYS:
        raise bad_request(f"keys must name 1 to {MAX_KEYS} keys")
    terminal = job.terminal
    if not _live(terminal):
        raise RoostError(UNSUPPORTED, f"job {job.id} has no live terminal (it has ended)")
    into = "dialog" if shows_dialog(terminal.reading) else None
    try:
        taken = terminal.send_keys(names)
    except UnknownKey as error:
        raise bad_request(str(error))
    call.services.timelines.keys(job, names, into=into)
    return {"id": job.id, "taken": taken}


@op("attach-resize", quick=True, args={"id": ATTACHED, "rows": ROWS.but(default=REQUIRED),
                                       "cols": COLS.but(default=REQUIRED)},
    result={"id": Text()})
def attach_resize(call):
    sink = _attached(call)
    sink.terminal.resize(call.args["rows"], call.args["cols"])
    return {"id": sink.job_id}


@op("detach", quick=True, args={"id": ATTACHED}, result={"id": Text()})
def detach(call):
    sink = _attached(call)
    sink.release()
    return {"id": sink.job_id}
