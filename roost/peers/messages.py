"""Messages between sessions (M43, M50): `send`, a child's `handback`, and the agent
items they make (`message`, `report`, and the watches' `notice`).

An item is kept in the target job's reply book until its agent took it (a protocol
agent acks it with `exact: true`; a terminal agent has it typed once its screen waits
for text, with a reply's submission check); a foreground peer gets it on its connection
and acks it with `peer_ack`. The rules of `send`: 8000 characters at most (`too_long`),
30 a minute from one sender (`rate_limited`), 20 items waiting for one session (`full`),
the same text to the same session within a minute is not sent again (`duplicate`).
"""

import collections
import logging
import secrets
import time

from roost.errors import BAD_REQUEST, NOT_FOUND, RATE_LIMITED, TOO_LONG, UNSUPPORTED, RoostError
from roost.peers import envelope
from roost.peers.directory import relation
from roost.term.reading import ready_for_text, shows_dialog

log = logging.getLogger(__name__)

MAX_TEXT = 8000
RATE = 30                   # messages a sender may send in RATE_WINDOW_S
RATE_WINDOW_S = 60.0
DUPLICATE_WINDOW_S = 60.0
TYPED_WAIT_S = 5.0          # a message typed at once: the time its submission check may take
MAX_RECENT = 4096           # messages remembered for `duplicate` before the old ones go
MAX_SENDERS = 256           # senders in the rate table before the quiet ones are pruned


def rate_key(sender):
    """What the rate limit counts by: the job (every connection that speaks for it, and
    every time it speaks again), or for a process roost did not start its process id as
    the kernel gives it (SO_PEERCRED), not as it says, so that registering again under a
    new name or another claimed pid starts no new count."""
    if sender.job is not None:
        return ("job", sender.job.id)
    peer_pid = getattr(sender.session, "peer_pid", None)
    return ("process", peer_pid or sender.pid)


class Messenger:
    def __init__(self, directory, runner, desk, links, bus):
        self.directory = directory
        self.runner = runner
        self.desk = desk
        self.links = links
        self.bus = bus
        self._sent = {}                                            # rate_key(sender) -> deque of times it sent
        self._recent = {}                                          # (sender, target, text) -> time
        self._foreground = {}                                      # ref -> (peer id, item) until peer_ack

    # -- send -------------------------------------------------------------------------

    def send(self, sender, query, text):
        """The `send` op: a SendResult, or the spec's refusal."""
        text = text.strip()
        if not text:
            raise RoostError(BAD_REQUEST, "message must not be empty")
        if len(text) > MAX_TEXT:
            raise RoostError(TOO_LONG, f"a message is at most {MAX_TEXT} characters ({len(text)} given)")
        target = self.directory.find(sender, query)
        related = relation(sender, target)
        result = {"id": target.id, "name": target.name, "relation": related}
        now = time.monotonic()
        key = (sender.id, target.id, text)
        if now - self._recent.get(key, -DUPLICATE_WINDOW_S) < DUPLICATE_WINDOW_S:
            return dict(result, outcome="duplicate")
        self._forget_quiet_senders(now)
        sent = self._sent.setdefault(rate_key(sender), collections.deque())
        while sent and now - sent[0] >= RATE_WINDOW_S:
            sent.popleft()
        if len(sent) >= RATE:
            raise RoostError(RATE_LIMITED, f"at most {RATE} messages a minute from one session")
        outcome = self.deliver(target, "message", envelope.message(sender, relation(target, sender), text),
                               sender)
        sent.append(now)
        if len(self._recent) > MAX_RECENT:
            self._recent = {k: at for k, at in self._recent.items() if now - at < DUPLICATE_WINDOW_S}
        self._recent[key] = now
        self.bus.publish("message", f"to {target.name}: {text}", target.id, target.name,
                         who=sender.name, who_id=sender.id, outcome=outcome["outcome"])
        return dict(result, **outcome)

    def _forget_quiet_senders(self, now):
        """The rate table keeps only senders that sent within the window: pruned once it
        holds many, so the senders that come and go do not pile up."""
        if len(self._sent) < MAX_SENDERS:
            return
        self._sent = {key: times for key, times in self._sent.items()
                      if times and now - times[-1] < RATE_WINDOW_S}

    # -- handback ---------------------------------------------------------------------

    def handback(self, child, state, text):
        """A spawned session's run ended: its parent gets a `report` item. Whether it
        had somewhere to go."""
        if child.parent is None:
            return False
        parent = next((peer for peer in self.directory.candidates(child) if peer.id == child.parent), None)
        if parent is None or not parent.takes_items:
            return False
        self.deliver(parent, "report", envelope.report(child, relation(parent, child), state, text), child)
        self.bus.publish("report", f"from {child.name}: {state}: {text}", parent.id, parent.name,
                         who=child.name, who_id=child.id)
        return True

    # -- delivery ---------------------------------------------------------------------

    def deliver(self, target, kind, text, sender=None, fields=None):
        """An agent item for `target`: {"outcome", "dialog"?} in the spec's words.
        `fields`: the item's own (a digest's `why`)."""
        extra = {"from": sender.name, "fromId": sender.id, "relation": relation(target, sender)} if sender else {}
        extra.update(fields or {})
        if target.job is None:
            return self._to_foreground(target, kind, text, extra)
        job = target.job
        if not target.takes_items:
            raise RoostError(UNSUPPORTED, f"{target.name} is a protocol agent that takes no messages "
                                            "(its hello did not say agent-items)")
        waiting_before = bool(job.replies().pending)
        item = self.desk.queue(job, text, kind=kind, extra=extra)
        if not job.running:
            return self._wake_for(job)
        if job.protocol:
            connected = self.links.connected(job) and job.id in self.links.agent_items
            return {"outcome": "delivered" if connected else "queued"}
        reading = job.terminal.reading if job.terminal is not None else {}
        if shows_dialog(reading):
            return {"outcome": "queued", "dialog": True}
        if not waiting_before and ready_for_text(reading) and self.desk.wait_typed(job, item["seq"], TYPED_WAIT_S):
            return {"outcome": "delivered"}
        return {"outcome": "queued"}

    def _wake_for(self, job):
        if job.state == "stopped" and not job.record.get("reaped"):
            return {"outcome": "stopped"}      # stopped on purpose: it waits for its next start
        try:
            self.runner.wake(job)
        except RoostError as error:
            log.info("job %s not started for a message: %s", job.id, error.text)
            return {"outcome": "not running"}
        return {"outcome": "started"}

    def _to_foreground(self, target, kind, text, extra):
        ref = secrets.token_hex(6)
        event = dict({"event": "deliver", "id": target.id, "ref": ref, "kind": kind, "text": text}, **extra)
        self._foreground[ref] = (target.id, event)
        target.session.on_close(lambda closed, ref=ref: self._foreground.pop(ref, None))
        target.session.send_event(event)
        return {"outcome": "delivered"}

    def foreground_ack(self, peer, ref):
        held = self._foreground.get(ref)
        if held is None or held[0] != peer.id:
            raise RoostError(NOT_FOUND, f"no item {ref!r} waits for this session")
        del self._foreground[ref]
