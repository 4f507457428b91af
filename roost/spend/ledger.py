"""One job's spend: its tokens by local day and model, and what it has counted, so that
each response counts once however often the records repeat it.

A response has a key (Claude Code's `(message.id, requestId)`, a Codex response id, a pi
entry id), kept as a 64-bit hash. The agent may write a response's figures more than
once as it streams (Claude Code: one line per content block, output growing): the last
figures win, so the latest responses are kept `open` with what was counted for them and
a repeat counts only its difference. Once OPEN_KEPT newer responses came after one, it
is final: a line of it seen again (a resumed or forked session copies the conversation
into a new file) counts nothing. The ledger is a plain dict on disk (`state`)."""

import base64
import collections
import hashlib
import struct

from roost.spend import tokens

OPEN_KEPT = 64


def response_key(*parts):
    """A response's key: a 64-bit hash of its identifying strings (stable across runs,
    unlike hash())."""
    digest = hashlib.blake2b("\x1f".join(str(part) for part in parts).encode("utf-8", "replace"),
                             digest_size=8).digest()
    return struct.unpack("<q", digest)[0]


class Ledger:
    __slots__ = ("tally", "seen", "open", "files", "report", "sessions", "changed", "version")

    def __init__(self):
        self.tally = {}                          # day -> model -> [input, output, cacheRead, cacheWrite]
        self.seen = set()                        # keys of the responses counted
        self.open = collections.OrderedDict()    # key -> (day, model, count) of the latest responses
        self.files = {}                          # path -> the reader's state of that file
        self.report = None                       # a protocol agent's last cumulative report
        self.sessions = []                       # every session id the job has had
        self.changed = False                     # not written since it changed
        self.version = 0                         # grows with every change of the tally

    # -- counting ---------------------------------------------------------------------

    def add(self, day, model, count):
        """Tokens spent on `day` by `model` (a count that may be all 0: nothing)."""
        if tokens.is_zero(count):
            return
        by_model = self.tally.setdefault(day or "unknown", {})
        into = by_model.get(model)
        if into is None:
            into = by_model[model] = tokens.zero()
        for index in range(4):
            into[index] += count[index]
        self.changed = True
        self.version += 1

    def response(self, key, day, model, count):
        """A response's figures as its record says them now: the last figures win."""
        held = self.open.get(key)
        if held is not None:
            old_day, old_model, old = held
            self.add(old_day, old_model, [-value for value in old])
            self.add(old_day, model or old_model, count)
            self.open[key] = (old_day, model or old_model, list(count))
            self.open.move_to_end(key)
            return
        if key in self.seen:
            return        # a copy of a response counted before (resume, fork)
        self.seen.add(key)
        self.add(day, model, count)
        self.open[key] = (day, model, list(count))
        if len(self.open) > OPEN_KEPT:
            self.open.popitem(last=False)

    # -- reading it -------------------------------------------------------------------

    def totals(self):
        """(the whole count, {model: count})."""
        whole, by_model = tokens.zero(), {}
        for models in self.tally.values():
            for model, count in models.items():
                tokens.add(whole, count)
                tokens.add(by_model.setdefault(model, tokens.zero()), count)
        return whole, by_model

    def empty(self):
        return not self.tally

    # -- on disk ----------------------------------------------------------------------

    def state(self):
        seen = b"".join(struct.pack("<q", key) for key in self.seen)
        return {"tally": self.tally, "seen": base64.b64encode(seen).decode("ascii"),
                "open": [[key, day, model, count] for key, (day, model, count) in self.open.items()],
                "files": self.files, "report": self.report, "sessions": self.sessions}

    @classmethod
    def from_state(cls, value):
        ledger = cls()
        if not isinstance(value, dict):
            return ledger
        tally = value.get("tally")
        if isinstance(tally, dict):
            for day, models in tally.items():
                if isinstance(models, dict):
                    for model, count in models.items():
                        if isinstance(count, list) and len(count) == 4:
                            ledger.tally.setdefault(day, {})[model] = [tokens.whole(item) for item in count]
        try:
            raw = base64.b64decode(value.get("seen") or "")
            ledger.seen = {key for (key,) in struct.iter_unpack("<q", raw[:len(raw) - len(raw) % 8])}
        except (ValueError, TypeError):
            ledger.seen = set()
        for entry in value.get("open") or ():
            if isinstance(entry, list) and len(entry) == 4 and isinstance(entry[3], list):
                ledger.open[entry[0]] = (entry[1], entry[2], entry[3])
        files = value.get("files")
        ledger.files = files if isinstance(files, dict) else {}
        ledger.report = value.get("report")
        sessions = value.get("sessions")
        ledger.sessions = [item for item in sessions if isinstance(item, str)] if isinstance(sessions, list) else []
        return ledger


class Batch:
    """What a reader counted in a thread, applied to the ledger later in the daemon's
    loop (the one place a ledger changes): the ledger's own two verbs, recorded."""

    __slots__ = ("events",)

    def __init__(self):
        self.events = []

    def add(self, day, model, count):
        self.events.append((False, day, model, count))

    def response(self, key, day, model, count):
        self.events.append((True, key, day, model, count))

    def apply(self, ledger):
        for event in self.events:
            if event[0]:
                ledger.response(*event[1:])
            else:
                ledger.add(*event[1:])
