"""Each job's flight recorder (issue 19 item 3): `jobs/<id>/timeline.jsonl`, one JSON
object a line, what happened to the job and why its row said what it said.

Entries (`at`: ms since the epoch, `kind`, and the kind's own fields):

| kind | when | fields |
|---|---|---|
| `state` | the row's state, status, waitingFor, resetsAt, held or error changed | the row's `state`, `status`, `waitingFor`, `resetsAt`, `summary`, `question`, `held`, `error`; `why`: the rule that decided it (roost.term.reading; `kernel`: the kernel's evidence it was read with, roost.unix.terminal_waits) or `{"rule": "report"}` for an agent's own report (`superseded`: the screen was read again before the entry was made); `screen`: the screen's text then; `answeredBy`: who ended a dialog |
| `held` | the screen read waiting while the kernel said no process of the job can be reading its terminal: the row stayed as it was (issue 27) | `state`, `status`, `waitingFor` (the row's, kept), `screen` (the screen's text), `why`: `{rule: "held", screen: the screen's own why, kernel: the evidence}` |
| `typed` | roost typed text into the terminal | `text`, `from` (a reply, or an agent item's kind), `mode`, `submitted`, `error`, `into` (`dialog` when it answered one) |
| `keys` | a person's named keys (`roost keys`) | `keys`, `into` |
| `started` / `adopted` | a run began, or a daemon took over a run an earlier one started | `argv`, `pid` |
| `session` | the agent's own session id was found (roost.jobs.sessions) | `id`, `file` (where it was found), `before` (the id it replaced, or null) |

It is a diagnostic record, not state: entries are queued and appended by one greenlet
off the path of whatever they record, with no fsync (a crash may lose the last few, and
a torn last line is skipped on reading). The job's directory is the agent's to write:
the file is opened with roost.unix.files' open_own (never through a planted link).
Bounded: past MAX_BYTES the file becomes `timeline.1.jsonl` (the one older part kept)
and a new one starts.
"""

import logging
import os

import gevent

from roost import codec
from roost.clock import now_ms
from roost.unix.files import open_own, open_own_for_reading

log = logging.getLogger(__name__)

FILE = "timeline.jsonl"
OLDER = "timeline.1.jsonl"
MAX_BYTES = 512 * 1024
WRITE_CHUNK = 64 * 1024
MAX_TEXT = 2000                 # a typed text, as recorded
MAX_SCREEN = 16 * 1024          # a screen's text, as recorded (a 1000x1000 window is no record)
MAX_QUEUED = 10000              # entries waiting for the writer; past it the oldest are dropped
ANSWER_WINDOW_MS = 10_000       # typing this recent ended a dialog that closed
_WATCHED = ("state", "status", "waitingFor", "resetsAt", "held", "error")


class Timelines:
    """Every job's timeline: `record` queues an entry, one greenlet writes them."""

    def __init__(self, registry):
        self.registry = registry
        self._queue = []           # (job, entry)
        self._writer = None
        self._last_input = {}      # job id -> (ms, who) of the last text or keys into it

    # -- what is recorded -------------------------------------------------------------
    def record(self, job, kind, **fields):
        if job.removed or not job.job_dir:
            return
        if len(self._queue) >= MAX_QUEUED:
            del self._queue[:len(self._queue) - MAX_QUEUED + 1]
        self._queue.append((job, dict({"at": now_ms(), "kind": kind}, **fields)))
        if self._writer is None or self._writer.dead:
            self._writer = gevent.spawn(self._write_queued)

    def row_changed(self, after, before):
        """A registry listener: a change of what the row says becomes a `state` entry."""
        if before is not None and all(after.get(key) == before.get(key) for key in _WATCHED):
            return
        job = self.registry.get(after["id"])
        if job is None:
            return
        terminal = job.terminal
        if job.record.get("reported"):
            why = {"rule": "report"}
        elif terminal is not None and job.running:
            reading = terminal.reading
            # The row is written before listeners hear of it: a reading that moved on
            # meanwhile is not the one that decided this row.
            agrees = all(reading.get(key) == after.get(key) for key in ("state", "status", "waitingFor"))
            why = reading.get("why") if agrees else {"rule": "superseded"}
        else:
            why = {"rule": "run-end"} if after["state"] in ("done", "failed", "stopped") else None
        entry = {key: after.get(key) for key in ("state", "status", "waitingFor", "resetsAt", "summary",
                                                   "question", "held", "error")}
        entry["why"] = why
        if terminal is not None:
            entry["screen"] = terminal.screen.text()[-MAX_SCREEN:]
        if before is not None and before.get("waitingFor") == "dialog" and after.get("waitingFor") != "dialog":
            entry["answeredBy"] = self._answered_by(job, terminal)
        self.record(job, "state", **entry)

    def held(self, job, reading):
        """The kernel held back what the screen said (roost.term.kernel_reading.held)."""
        terminal = job.terminal
        self.record(job, "held", **{key: reading.get(key) for key in ("state", "status", "waitingFor")},
                    why=reading.get("why"), screen=terminal.screen.text()[-MAX_SCREEN:] if terminal else None)

    def typing(self, job, source):
        """The reply desk begins to type (its echo may end a dialog before it is done)."""
        self._last_input[job.id] = (now_ms(), "a reply" if source == "reply" else f"a {source} item")

    def typed(self, job, text, source, mode, result, into=None):
        """The reply desk typed `text` (a reply, or an agent item of kind `source`)."""
        self.typing(job, source)
        self.record(job, "typed", text=text[:MAX_TEXT], **{"from": source}, mode=mode,
                    submitted=bool(result.get("submitted")), error=result.get("error"), into=into)

    def keys(self, job, names, into=None):
        self._last_input[job.id] = (now_ms(), "the person's keys")
        self.record(job, "keys", keys=list(names), into=into)

    def started(self, job, adopted=False):
        self.record(job, "adopted" if adopted else "started", argv=job.record.get("lastArgv"),
                    pid=job.record.get("pid"))

    def _answered_by(self, job, terminal):
        when, who = self._last_input.get(job.id, (0, None))
        if who is not None and now_ms() - when <= ANSWER_WINDOW_MS:
            return who
        if terminal is not None and terminal.attached:
            return "the person attached"
        return "unknown: no input from roost or an attacher (the agent moved on by itself)"

    # -- writing ----------------------------------------------------------------------
    def _write_queued(self):
        while self._queue:
            batch, self._queue = self._queue, []
            lines = {}
            for job, entry in batch:
                lines.setdefault(job, []).append(codec.encode(entry) + b"\n")
            for job, encoded in lines.items():
                # A job being removed: its directory is going (in the threadpool, so
                # this loop runs meanwhile), and a file made in it now would stop that.
                if job.removed:
                    continue
                directory = job.job_dir
                try:
                    append(directory, encoded)
                except FileNotFoundError:
                    pass            # the job was removed meanwhile
                except OSError as error:
                    log.warning("the timeline in %s could not be written: %s", directory, error)
                gevent.sleep(0)

    def flush(self):
        """Write what is queued now (a test, the daemon leaving)."""
        if self._writer is not None:
            self._writer.join(timeout=5)


def append(directory, lines):
    """Appends the encoded entries `lines`, in writes of at most WRITE_CHUNK, starting a
    new part whenever the current one reaches MAX_BYTES."""
    path = os.path.join(directory, FILE)
    index = 0
    while index < len(lines):
        fd = open_own(path, os.O_WRONLY | os.O_APPEND)
        try:
            size = os.fstat(fd).st_size
            while index < len(lines) and size < MAX_BYTES:
                chunk = []
                taken = 0
                while index < len(lines) and taken < WRITE_CHUNK and size + taken < MAX_BYTES:
                    chunk.append(lines[index])
                    taken += len(lines[index])
                    index += 1
                view = memoryview(b"".join(chunk))
                while view:
                    view = view[os.write(fd, view):]
                size += taken
        finally:
            os.close(fd)
        if size >= MAX_BYTES:
            # A rename replaces whatever is at the older part's name, link or not,
            # without following it.
            os.replace(path, os.path.join(directory, OLDER))


def read(directory, limit=None):
    """The job's entries, oldest first (the older part's, then the current's); the last
    `limit` of them when given. A line that is not JSON (torn by a crash) is skipped."""
    entries = []
    for name in (OLDER, FILE):
        fd = open_own_for_reading(os.path.join(directory, name))
        if fd is None:
            continue
        with os.fdopen(fd, "rb") as stream:
            data = stream.read(4 * MAX_BYTES)
        for line in data.splitlines():
            try:
                entry = codec.decode(line)
            except ValueError:
                continue
            if isinstance(entry, dict):
                entries.append(entry)
    return entries[-limit:] if limit else entries
