"""The one writer of every job's reply log: group commit across jobs.

A change to a reply book is a record appended to that job's `replies.log`. Records made
in the same loop turn go out together in one batch: one write and one fdatasync per
log, all of a batch in one task of the threadpool, then every waiter of the batch goes
on. A book's records wait while a batch of that book is on its way to the disk (or its
log folds), and then go together in the next batch of it; records of other books do not
wait for it (issue 21: a reply waited behind another job's ack, one fdatasync more on a
busy disk). A book's batches never overlap and land in the order they were made, so a
book on disk is always a prefix of the changes made in memory.
"""

import logging

import gevent
import gevent.event

from roost import store

log = logging.getLogger(__name__)


class _Record:
    __slots__ = ("book", "generation", "line", "done", "error")

    def __init__(self, book, generation, line):
        self.book = book
        self.generation = generation      # the book's count of changes, this one included
        self.line = line
        self.done = gevent.event.Event()
        self.error = None


class BookWriter:
    def __init__(self):
        self._waiting = []                # records not in a batch yet, in the order made
        self._busy = set()                # books a batch writes (or folds) now
        self._launcher = None

    def append(self, book, generation, line):
        """Write `line` to `book`'s log; returns once it is on disk (raises what the
        write raised). `generation`: the book's count of changes, this one included."""
        record = _Record(book, generation, line)
        self._waiting.append(record)
        self._launch_soon()
        record.done.wait()
        if record.error is not None:
            raise record.error

    def _launch_soon(self):
        # Spawned, it runs once this turn's greenlets have gone on: what they append
        # meanwhile goes in the same batch.
        if self._launcher is None:
            self._launcher = gevent.spawn(self._launch)

    def _launch(self):
        """A batch of every waiting record whose book no batch writes now."""
        self._launcher = None
        batch, kept = [], []
        for record in self._waiting:
            (kept if record.book in self._busy else batch).append(record)
        self._waiting = kept
        if not batch:
            return
        books = {record.book for record in batch}
        self._busy |= books
        # Written from this greenlet: records made meanwhile spawn a launcher of their own.
        self._write_batch(batch, books)

    def _write_batch(self, batch, books):
        try:
            self._write(batch)
        except Exception as error:     # every waiter hears of it; the next batch tries again
            log.exception("a batch of reply records was not written")
            for record in batch:
                record.error = error
        for record in batch:
            record.done.set()
        # Folds come after the batch's waiters go on: theirs is on disk, and a fold (a
        # snapshot's write, the log cut) would add two syncs to their wait. The book's
        # records made meanwhile wait for its next batch, as they would for this one.
        try:
            self._fold(books)
        finally:
            self._busy -= books
            if self._waiting:
                self._launch_soon()

    @staticmethod
    def _write(batch):
        by_book = {}
        for record in batch:
            lines, _ = by_book.get(record.book, ([], 0))
            lines.append(record.line)
            by_book[record.book] = (lines, record.generation)
        store.append_many([(book.log_path, b"".join(lines)) for book, (lines, _) in by_book.items()])
        for book, (lines, generation) in by_book.items():
            book.written(generation, sum(len(line) for line in lines))

    @staticmethod
    def _fold(books):
        for book in books:
            if book.log_size > book.log_limit:
                try:
                    book.fold()
                except Exception:     # the log stays whole: folded on a later batch
                    log.exception("the reply log %s was not folded into its snapshot", book.log_path)


WRITER = BookWriter()
