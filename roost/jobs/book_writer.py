"""The one writer of every job's reply log: group commit across jobs.

A change to a reply book is a record appended to that job's `replies.log`. Records made
in the same loop turn, or while the writer's last batch was on its way to the disk, go
out together in the next batch: one write and one fdatasync per log, all of a batch in
one task of the threadpool, then every waiter of the batch goes on. Batches never
overlap and land in the order they were made, so a book on disk is always a prefix of
the changes made in memory.
"""

import logging

import gevent
import gevent.event

from roost import store

log = logging.getLogger(__name__)


class _Batch:
    __slots__ = ("records", "done", "error")

    def __init__(self):
        self.records = []                 # (book, generation, line bytes), in the order made
        self.done = gevent.event.Event()
        self.error = None


class BookWriter:
    def __init__(self):
        self._next = _Batch()
        self._greenlet = None

    def append(self, book, generation, line):
        """Write `line` to `book`'s log; returns once it is on disk (raises what the
        write raised). `generation`: the book's count of changes, this one included."""
        batch = self._next
        batch.records.append((book, generation, line))
        if self._greenlet is None or self._greenlet.dead:
            self._greenlet = gevent.spawn(self._run)
        batch.done.wait()
        if batch.error is not None:
            raise batch.error

    def _run(self):
        while self._next.records:
            batch, self._next = self._next, _Batch()
            books = ()
            try:
                books = self._write(batch)
            except Exception as error:     # every waiter hears of it; the next batch tries again
                log.exception("a batch of reply records was not written")
                batch.error = error
            batch.done.set()
            # Folds come after the batch's waiters go on: theirs is on disk, and a fold
            # (a snapshot's write, the log cut) would add two syncs to their wait. What is
            # made meanwhile waits for the next batch, as it would for this one.
            self._fold(books)

    def _write(self, batch):
        by_book = {}
        for book, generation, line in batch.records:
            lines, _ = by_book.get(book, ([], 0))
            lines.append(line)
            by_book[book] = (lines, generation)
        store.append_many([(book.log_path, b"".join(lines)) for book, (lines, _) in by_book.items()])
        for book, (lines, generation) in by_book.items():
            book.written(generation, sum(len(line) for line in lines))
        return by_book

    def _fold(self, books):
        for book in books:
            if book.log_size > book.log_limit:
                try:
                    book.fold()
                except Exception:     # the log stays whole: folded on a later batch
                    log.exception("the reply log %s was not folded into its snapshot", book.log_path)


WRITER = BookWriter()
