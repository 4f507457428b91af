"""The event bus: what happened is published once, where it happens (a job started, a
state change that matters, a reply, a message, a report, a notice, a removal, the
daemon's own start), and its listeners hear of it once it is in the feed, in seq order.

Publishing never waits: events wait in a batch for the one writer greenlet, which writes
them to the feed (one durable append for all that came meanwhile) and then tells the
listeners. An event alone is written at once; under a storm (500 agents messaged at
once) the first goes at once and the rest wait for its fsync, to go in one append
together: one fsync in flight at a time, never a wait for a clock. Nothing polls rows
to find out what changed.

An event of what a durable write does (a reply kept on its job's book) is published
`during` that write: the feed's append and the write overlap, one disk wait where
there were two in a row (issue 21: a lone reply's event took two fsyncs' tails), and
the listeners hear of it only once the write is done. A write that fails leaves its
event untold, and the feed says that it did not happen.
"""

import contextlib
import logging
import time

import gevent
import gevent.event

log = logging.getLogger(__name__)

TEXT_LIMIT = 300
RETRY_S = 1.0        # a feed that cannot be written is tried again this often


def one_line(text, limit=TEXT_LIMIT):
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


class _Hold:
    """What a held event waits for before it is told: the end of the write it is about."""
    __slots__ = ("ended", "failed")

    def __init__(self):
        self.ended = gevent.event.Event()
        self.failed = False


class EventBus:
    def __init__(self, feed):
        self.feed = feed
        self.listeners = []          # fn(event) for each event, once it is in the feed
        self._pending = []           # (event, its _Hold or None), in the order published
        self._writer = None

    def publish(self, kind, text, job_id=None, name=None, who=None, who_id=None, **fields):
        """One event: its `kind`, one line of `text`, the job it is about (`job_id`,
        `name`) and what caused it when a job did (`who`, `who_id`)."""
        self._add(self._event(kind, text, job_id, name, who, who_id, fields), None)

    @contextlib.contextmanager
    def during(self, kind, text, job_id=None, name=None, who=None, who_id=None, **fields):
        """The event of what the block writes durably: in the feed while the block runs,
        told once it ends. A block that raises: never told; once in the feed, followed
        there by a `notice` that it did not happen."""
        event = self._event(kind, text, job_id, name, who, who_id, fields)
        hold = _Hold()
        self._add(event, hold)
        try:
            yield event
        except BaseException as error:
            hold.failed = True
            if not any(pending is event for pending, _ in self._pending):
                self.publish("notice", f"not done: {event['text']} ({error})", job_id, name)
            self._pending = [(pending, held) for pending, held in self._pending if pending is not event]
            raise
        finally:
            hold.ended.set()

    @staticmethod
    def _event(kind, text, job_id, name, who, who_id, fields):
        event = {"at": int(time.time() * 1000), "kind": kind, "id": job_id, "name": name,
                 "text": one_line(text)}
        if who is not None:
            event["who"] = who
            event["whoId"] = who_id
        event.update(fields)
        return event

    def _add(self, event, hold):
        self._pending.append((event, hold))
        if self._writer is None:
            # A held event's writer starts a turn later (a timer, after this turn's
            # callbacks): the write it is about reaches the disk first, and its own
            # waiters (an agent's reply) never wait behind the feed's fsync.
            self._writer = gevent.spawn_later(0, self._write_loop) if hold is not None \
                else gevent.spawn(self._write_loop)

    def _write_loop(self):
        try:
            while self._pending:
                batch, self._pending = self._pending, []
                try:
                    self.feed.append([event for event, _ in batch])
                except OSError as error:
                    log.error("the feed cannot be written (%s): %d events wait", error, len(batch))
                    self._pending[:0] = batch
                    gevent.sleep(RETRY_S)
                    continue
                for event, hold in batch:
                    if hold is not None:
                        hold.ended.wait()     # the events after it wait too: told in seq order
                        if hold.failed:
                            continue
                    self._tell(event)
        finally:
            self._writer = None

    def _tell(self, event):
        for listener in list(self.listeners):
            try:
                listener(event)
            except Exception:
                log.exception("an event listener failed")

    def flush(self, timeout=5.0):
        """Wait until every event published so far is written and told (the daemon leaves)."""
        writer = self._writer
        if writer is not None:
            writer.join(timeout)
