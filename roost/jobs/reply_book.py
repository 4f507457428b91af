"""A job's replies: numbered, persisted before they are answered, pending until acked
(spec "Replies: the deliver event and ack", "Request ids" M36).

Each job's book lives in `jobs/<id>/replies.json`, one atomic write per change: the
reply and its request id go to disk together, so a resend after a crash is recognised.
Sequence numbers start at 1, are never reused and continue across restarts (nextSeq is
kept even when nothing is pending).

Many clients change one book at once (a hub, the CLI, the concierge, peers replying
together). Its writes never overlap and land in the order they were made: a change
waits for a write that started after it (which carries every change before it too), so
a slow write can never put an older book back over a newer one. An item is `ready`
(handed to an agent, typed into a terminal) only once a write that holds it is on disk:
a kill before that takes the item with the write, and nobody has seen its seq.
"""

import os
import time

import gevent.lock

from roost import store
from roost.errors import RoostError

VERSION = 1
MAX_PENDING = 50          # spec: `full` past 50 waiting
MAX_ITEMS = 20            # M43: 20 agent items (messages, reports, notices) waiting per session
KEEP_REQUEST_IDS = 100    # M36: a job remembers its last 100 reply ids


class ReplyBook:
    def __init__(self, job_dir):
        self.path = os.path.join(job_dir, "replies.json")
        self.data = store.read_json(self.path) or {"version": VERSION, "nextSeq": 1, "pending": [], "requestIds": []}
        self.data.setdefault("nextSeq", 1)
        self.data.setdefault("pending", [])
        self.data.setdefault("requestIds", [])
        self._changed = 0            # changes made in memory
        self._saved = 0              # changes on disk
        self._unsaved_items = {}     # seq -> the change that added it, until that is on disk
        self._write_lock = gevent.lock.Semaphore()

    # -- reading ------------------------------------------------------------
    @property
    def pending(self):
        return list(self.data["pending"])

    @property
    def ready(self):
        """The pending items whose write is on disk, in seq order: the only ones that may
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

    # -- changing (each persisted before it returns) -------------------------
    def add(self, text, mode=None, request_id=None, kind=None, extra=None):
        """Queue a reply; returns its item. Raises `full` at MAX_PENDING user replies."""
        if not kind and self.queued >= MAX_PENDING:
            raise RoostError("full", f"{MAX_PENDING} replies are already waiting for this job")
        if kind and self.items >= MAX_ITEMS:
            raise RoostError("full", f"{MAX_ITEMS} messages and notices are already waiting for this session")
        seq = self.data["nextSeq"]
        item = {"seq": seq, "text": text, "at": int(time.time() * 1000)}
        if mode:
            item["mode"] = mode
        if kind:
            item["kind"] = kind
        if extra:
            item.update(extra)
        self.data["nextSeq"] = seq + 1
        self.data["pending"].append(item)
        self._remember(request_id, seq)
        self._unsaved_items[seq] = self._changed + 1
        self._save()
        return item

    def remember(self, request_id, seq=0):
        """Record a request id taken without queueing (a reply typed into a terminal)."""
        if request_id is None:
            return
        self._remember(request_id, seq)
        self._save()

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

        before = len(self.data["pending"])
        kept = [item for item in self.data["pending"] if not cleared(item)]
        if len(kept) == before:
            return 0
        self.data["pending"] = kept
        self._save()
        return before - len(kept)

    def _remember(self, request_id, seq):
        if request_id is None:
            return
        ids = self.data["requestIds"]
        ids.append([request_id, seq])
        del ids[:-KEEP_REQUEST_IDS]

    def _save(self):
        """Returns once this change (and every one before it) is on disk. Writes never
        overlap; a change that waited finds itself written by the write before it when
        that one started after the change (group commit)."""
        self._changed += 1
        wanted = self._changed
        with self._write_lock:
            if self._saved >= wanted:
                return
            covered = self._changed
            store.write_json(self.path, self.data)
            self._saved = covered
            if self._unsaved_items:
                self._unsaved_items = {seq: change for seq, change in self._unsaved_items.items()
                                       if change > covered}
