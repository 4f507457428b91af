"""A job's replies: numbered, persisted before they are answered, pending until acked
(spec "Replies: the deliver event and ack", "Request ids" M36).

Each job's book is `jobs/<id>/replies.json` (a snapshot) and `jobs/<id>/replies.log`
(the changes since, one JSON record a line, appended): a change is one small append,
written with the changes of every other book made in the same turn (roost.jobs.
book_writer: one write and one fdatasync per log and batch), where a rewrite of the
whole book took two fsyncs and a rename. A reply and its request id go to disk in one
record, so a resend after a crash is recognised. Past LOG_LIMIT the log is folded into
a new snapshot. Read back, a torn last record (a kill in the middle of a write) is
dropped and cut off: it was never answered ok. Sequence numbers start at 1, are never
reused and continue across restarts (nextSeq is kept even when nothing is pending).

Many clients change one book at once (a hub, the CLI, the concierge, peers replying
together). Its records land in the order they were made, so the book on disk is always
an earlier state of the one in memory. An item is `ready` (handed to an agent, typed into
a terminal) only once the record that adds it is on disk: a kill before that takes the
item with the record, and nobody has seen its seq.
"""

import os

from roost import codec, store
from roost.clock import now_ms
from roost.errors import FULL, RoostError
from roost.jobs.book_writer import WRITER
from roost.unix.files import open_own, open_own_for_reading

VERSION = 1
MAX_PENDING = 50          # spec: `full` past 50 waiting
MAX_ITEMS = 20            # M43: 20 agent items (messages, reports, notices) waiting per session
KEEP_REQUEST_IDS = 100    # M36: a job remembers its last 100 reply ids
LOG_LIMIT = 64 * 1024     # a log past this is folded into the snapshot


def prepare(job_dir):
    """An empty log, made with the job's directory: its name is on disk with the job's
    first record (the write of job.json syncs the directory), so a first change costs one
    fdatasync, not that and a sync of the directory the log appeared in (issue 21: with
    500 agents each one's first reply paid it, and a whole round's tail with it)."""
    os.close(open_own(os.path.join(job_dir, "replies.log"), os.O_WRONLY))


def _empty():
    return {"version": VERSION, "nextSeq": 1, "pending": [], "requestIds": []}


def apply(data, record):
    """One record of the log, applied to a book's data. Applying one twice changes
    nothing (a fold writes the snapshot before it cuts the log)."""
    item = record.get("add")
    if isinstance(item, dict) and isinstance(item.get("seq"), int) and item["seq"] >= data["nextSeq"]:
        data["pending"].append(item)
        data["nextSeq"] = item["seq"] + 1
    cleared = record.get("clear")
    if isinstance(cleared, list):
        gone = set(cleared)
        data["pending"] = [kept for kept in data["pending"] if kept["seq"] not in gone]
    typed = record.get("typed")
    if isinstance(typed, int):
        for item in data["pending"]:
            if item["seq"] == typed:
                item["typed"] = True
    known = record.get("rid")
    if isinstance(known, list) and len(known) == 2 and known not in data["requestIds"]:
        data["requestIds"].append(known)
        del data["requestIds"][:-KEEP_REQUEST_IDS]


def read_log(path):
    """The records of a log, and the length of its whole records (what follows is torn)."""
    fd = open_own_for_reading(path)
    if fd is None:
        return [], 0
    try:
        with os.fdopen(fd, "rb") as handle:
            raw = handle.read()
    except OSError:
        return [], 0
    records, good = [], 0
    for line in raw.splitlines(keepends=True):
        if not line.endswith(b"\n"):
            break
        try:
            record = codec.decode(line)
        except ValueError:
            break
        if not isinstance(record, dict):
            break
        records.append(record)
        good += len(line)
    return records, good


def read_book(job_dir):
    """A book as it is on disk: {nextSeq, pending, requestIds} (for tools and tests)."""
    data = store.read_json(os.path.join(job_dir, "replies.json")) or _empty()
    for record in read_log(os.path.join(job_dir, "replies.log"))[0]:
        apply(data, record)
    return data


class ReplyBook:
    def __init__(self, job_dir):
        self.path = os.path.join(job_dir, "replies.json")
        self.log_path = os.path.join(job_dir, "replies.log")
        self.data = store.read_json(self.path) or _empty()
        for field, default in _empty().items():
            self.data.setdefault(field, default)
        records, good = read_log(self.log_path)
        for record in records:
            apply(self.data, record)
        try:
            torn = os.lstat(self.log_path).st_size > good
        except FileNotFoundError:
            torn = False
        if torn:
            # A record torn by a kill was never answered ok: cut off, so the next append
            # starts a whole line. Inline: the book is read where nothing may run between.
            store.truncate_now(self.log_path, good)
        self.log_size = good
        self.log_limit = LOG_LIMIT
        self._changed = 0            # changes made in memory
        self._saved = 0              # changes on disk
        self._unsaved_items = {}     # seq -> the change that added it, until that is on disk

    # -- reading ------------------------------------------------------------
    @property
    def pending(self):
        return list(self.data["pending"])

    @property
    def ready(self):
        """The pending items whose record is on disk, in seq order: the only ones that may
        reach an agent or a terminal."""
        if not self._unsaved_items:
            return list(self.data["pending"])
        return [item for item in self.data["pending"] if item["seq"] not in self._unsaved_items]

    @property
    def queued(self):
        """The user's replies waiting (JobRow.queued)."""
        return sum(1 for item in self.data["pending"] if not item.get("kind"))

    @property
    def items(self):
        """Agent items waiting (kind set: a message, a report, a notice)."""
        return sum(1 for item in self.data["pending"] if item.get("kind"))

    def answer_for(self, request_id):
        """The seq a request id was taken as, or None when it is new."""
        if request_id is None:
            return None
        for known, seq in self.data["requestIds"]:
            if known == request_id:
                return seq
        return None

    # -- changing (each on disk before it returns) ---------------------------
    def add(self, text, mode=None, request_id=None, kind=None, extra=None):
        """Queue a reply; returns its item. Raises `full` at MAX_PENDING user replies."""
        if not kind and self.queued >= MAX_PENDING:
            raise RoostError(FULL, f"{MAX_PENDING} replies are already waiting for this job")
        if kind and self.items >= MAX_ITEMS:
            raise RoostError(FULL, f"{MAX_ITEMS} messages and notices are already waiting for this session")
        seq = self.data["nextSeq"]
        item = {"seq": seq, "text": text, "at": now_ms()}
        if mode:
            item["mode"] = mode
        if kind:
            item["kind"] = kind
        if extra:
            item.update(extra)
        record = {"add": item}
        if request_id is not None:
            record["rid"] = [request_id, seq]
        apply(self.data, record)
        self._unsaved_items[seq] = self._changed + 1
        self._save(record)
        return item

    def remember(self, request_id, seq=0):
        """Record a request id taken without queueing (a reply typed into a terminal)."""
        if request_id is None:
            return
        record = {"rid": [request_id, seq]}
        apply(self.data, record)
        self._save(record)

    def mark_typed(self, seq):
        """Item `seq`'s text and submit keys were written into the job's terminal: a daemon
        that adopts the job after a kill takes it off rather than typing it again."""
        if not any(item["seq"] == seq for item in self.data["pending"]):
            return
        record = {"typed": seq}
        apply(self.data, record)
        self._save(record)

    def ack(self, seq, exact=False, sent=None):
        """An ack covers every user reply up to seq; `exact` only that one item. `sent`:
        the seqs the acking agent was sent (an ack never clears what it was not sent: a
        reply still on its way would be lost). Returns how many items it cleared."""
        def cleared(item):
            if sent is not None and item["seq"] not in sent:
                return False
            if exact:
                return item["seq"] == seq
            return item["seq"] <= seq and not item.get("kind")

        gone = [item["seq"] for item in self.data["pending"] if cleared(item)]
        if not gone:
            return 0
        record = {"clear": gone}
        apply(self.data, record)
        self._save(record)
        return len(gone)

    def _save(self, record):
        """Returns once this change (and every one before it) is on disk."""
        self._changed += 1
        WRITER.append(self, self._changed, codec.encode(record) + b"\n")

    def written(self, generation, size):
        """The writer's word: changes up to `generation` are on disk, the log grew by
        `size`."""
        self._saved = max(self._saved, generation)
        if self._unsaved_items:
            self._unsaved_items = {seq: change for seq, change in self._unsaved_items.items()
                                   if change > self._saved}
        self.log_size += size

    def fold(self):
        """The log, past its limit, becomes the snapshot (the writer calls it between
        batches). The snapshot is what memory holds now: what is on disk already, or in a
        record still to come, which then applies to it as to the book before: no change."""
        store.write_json(self.path, self.data)
        store.truncate(self.log_path, 0)
        self.log_size = 0
