"""The feed: the last 1000 events, each with a `seq` that is never reused or skipped and
continues across daemon restarts (M43 `events`).

On disk it is `events.log`, one JSON event a line, appended durably for each batch of
events (roost.store's OpenLog: its fd kept open); past 2000 lines it is written again,
atomically, with the last 1000. An event is given its seq as it is written: one that was never written was never
told to anyone, so a crash takes no seq that someone saw.
"""

import collections
import logging
import os

from roost import codec, store

log = logging.getLogger(__name__)

KEEP = 1000
COMPACT_AT = 2 * KEEP
FILE = "events.log"


class EventFeed:
    def __init__(self, home):
        self.path = os.path.join(home, FILE)
        self._log = store.OpenLog(self.path)
        self.events = collections.deque(maxlen=KEEP)
        self.next_seq = 1
        self._lines = 0

    def load(self):
        try:
            with open(self.path, "rb") as handle:
                data = handle.read()
        except FileNotFoundError:
            return
        lines = data.split(b"\n")
        torn = lines.pop()              # what follows the last newline: empty, or torn
        if torn:
            log.warning("%s ends in a torn line (%d bytes): dropped", self.path, len(torn))
        for number, line in enumerate(lines, 1):
            try:
                event = codec.decode(line)
                seq = event["seq"]
                if not isinstance(seq, int) or seq < self.next_seq:
                    raise ValueError("its seq does not follow the one before")
            except (ValueError, KeyError, TypeError) as error:
                log.error("%s line %d cannot be read (%s): skipped", self.path, number, error)
                continue
            self.events.append(event)
            self.next_seq = seq + 1
        self._lines = len(lines)
        log.info("the feed holds %d events; the next is %d", len(self.events), self.next_seq)

    def append(self, batch):
        """Give each event its seq and write them; on a failure no seq is taken."""
        first = self.next_seq
        for offset, event in enumerate(batch):
            event["seq"] = first + offset
        try:
            if self._lines + len(batch) > COMPACT_AT:
                kept = (list(self.events) + batch)[-KEEP:]
                self._log.reopen()        # the fd of the file it replaces is kept no longer
                store.write_bytes(self.path, b"".join(codec.encode(event) + b"\n" for event in kept))
                self._lines = len(kept)
            else:
                self._log.append(b"".join(codec.encode(event) + b"\n" for event in batch))
                self._lines += len(batch)
        except BaseException:
            for event in batch:
                del event["seq"]
            raise
        self.next_seq = first + len(batch)
        self.events.extend(batch)

    @property
    def last_seq(self):
        return self.next_seq - 1

    def read(self, after=None, limit=None, job_id=None):
        """(events, cursor): after a cursor the oldest first that follow it; without one
        the newest `limit`, oldest first. `job_id`: those about that job or caused by it.
        The cursor is the last seq given, or the feed's last when none is."""
        events = [event for event in self.events
                  if job_id is None or event.get("id") == job_id or event.get("whoId") == job_id]
        if after is not None:
            events = [event for event in events if event["seq"] > after]
            if limit is not None:
                events = events[:limit]
        elif limit is not None:
            events = events[-limit:] if limit else []
        cursor = events[-1]["seq"] if events else max(self.last_seq if after is None else after, 0)
        return events, cursor
