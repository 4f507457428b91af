"""The hubs' subscriptions (`subscribe`): each subscribed session gets pushes, encoded
once for all of them and written without waiting on any (a subscriber that stops
reading is dropped at the connection's 16 MiB limit, the others go on):

    {"event": "feed", "entry": RoostEvent}    each event of the feed, as it is written
    {"event": "rows", "rows": [JobRow]}        rows that changed, coalesced
    {"event": "removed", "id": ID}             a job removed
    {"event": "board", ...counts}              the board's counts (roost.board)

Row changes are coalesced: a job whose line changes every 100 ms gets one push per
ROWS_EVERY, with its latest row, in a push that carries every row that changed since.
A change a person acts on (its state, what it waits for, its question, its choices,
its name: URGENT) goes out on the next turn of the loop, with whatever waited beside
it: it reaches an open page or a hub within milliseconds, not up to ROWS_EVERY later
(issue 30: a state change on a page within 100 ms p99).
"""

import logging
import time

import gevent

from roost import codec

log = logging.getLogger(__name__)

ROWS_EVERY = 0.2
URGENT = ("state", "waitingFor", "status", "question", "choices", "suggested", "name", "pinned")


class Subscribers:
    def __init__(self, decorate=None):
        self.sessions = set()
        self._decorate = decorate        # fn(row) -> row: what a row says of others (parentOpen)
        self._rows = {}                  # job id -> its latest row, not pushed yet
        self._flusher = None
        self._flusher_now = False        # the flusher waiting is due on the next turn
        self._flushed_at = 0.0

    def add(self, session):
        if session in self.sessions:
            return
        self.sessions.add(session)
        session.on_close(self.sessions.discard)

    def push(self, message):
        """One push to every subscriber, encoded once."""
        if not self.sessions:
            return
        line = codec.encode(message) + b"\n"
        for session in list(self.sessions):
            session.send_line(line)

    def event(self, event):
        self.push({"event": "feed", "entry": event})

    def row_changed(self, row, before):
        if not self.sessions:
            return
        self._rows[row["id"]] = row
        urgent = before is None or any(before.get(field) != row.get(field) for field in URGENT)
        if urgent and self._flusher is not None and not self._flusher_now:
            self._flusher.kill(block=False)
            self._flusher = None
        if self._flusher is None:
            wait = 0.0 if urgent else max(0.0, self._flushed_at + ROWS_EVERY - time.monotonic())
            self._flusher_now = wait == 0.0
            self._flusher = gevent.spawn_later(wait, self._flush_rows)

    def removed(self, row):
        self._rows.pop(row["id"], None)
        self.push({"event": "removed", "id": row["id"]})

    def _flush_rows(self):
        self._flusher = None
        self._flushed_at = time.monotonic()
        rows, self._rows = list(self._rows.values()), {}
        if rows:
            if self._decorate is not None:
                rows = [self._decorate(row) for row in rows]
            self.push({"event": "rows", "rows": rows})
