"""The user's replies to a job: typed into a terminal agent's pty and submitted, or kept
for a protocol agent's connection (issue 3 item 4, M31).

Every reply that is not typed at once waits in the job's reply book (roost.jobs.
reply_book, `replies.json`): a followUp to an agent at work, a reply to an ended or
reaped job (which is started again for it), a profile's task, a respawn's prompt. One
greenlet per job types them in order, each once the screen says the agent waits for
text (never into a dialog, never into a screen it cannot read: roost.term.reading), and
takes it off the book only after typing it (a crash in between types it again: spec
"Request ids"). A steer, a followUp to an agent that waits with nothing queued before
it, and the user's own answer to a dialog are typed at once and answered with whether
they were submitted. Nothing is typed while a person attached to the job has typed a
line not yet submitted (roost.term.drafts): what would be typed at once waits on the
book instead, and the typist waits for the line to be submitted, cleared or left.

A protocol agent takes its replies over the protocol, never typed: they wait in the
same book for its connection (roost.jobs.agent_links).
"""

import logging
import time

import gevent
import gevent.event

from roost.clock import now_ms
from roost.errors import UNSUPPORTED, RoostError
from roost.jobs.record import budget_held
from roost.term.reading import ready_for_text, shows_dialog

log = logging.getLogger(__name__)

STOP_COMMAND = "/stop"


class ReplyDesk:
    def __init__(self, registry, runner, links):
        self.registry = registry
        self.runner = runner
        self.links = links
        self._typists = {}          # job id -> the greenlet typing its queued replies
        self._typed = {}            # job id -> an Event set when its typist took an item off
        self._adopted = set()       # job ids whose first item a daemon before this one may have typed
        self.on_typed = []          # fn(job, text, source, mode, result, into) after each typing
        self.on_typing = []         # fn(job, source) as a typing begins (what it does shows at once)

    def reply(self, job, text, mode, request_id, who=None, who_id=None):
        """The `reply` op for one job; the answer per the spec's reply result. `who`,
        `who_id`: the job that answers in the user's place (the concierge, M45)."""
        replies = job.replies()
        if request_id is not None and replies.answer_for(request_id) is not None:
            # M36: taken once; a job that was to be started for it is started now.
            if not job.running and replies.queued:
                self.runner.wake(job)
            return {"delivered": False, "saved": True, "duplicate": True}
        if text.strip() == STOP_COMMAND:
            # spec: a reply of /stop is never delivered: the daemon stops the job.
            self.runner.stop(job)
            return {"delivered": False, "saved": False, "stopped": True}
        if budget_held(job):
            # Parked at a budget (issue 29): kept, and typed once the person allows more.
            return self._keep(job, text, mode, request_id, who, who_id)
        connected = job.protocol and self.links.connected(job)
        if job.protocol and text.startswith("/") and not connected:
            # spec "Replies": a command is meaningful live only.
            raise RoostError(UNSUPPORTED, "a reply starting with / is a command for the agent, "
                                            "and the agent is not connected")
        if not job.running:
            self.queue(job, text, mode, request_id)
            self._feed_reply(job, text, mode, who, who_id)
            try:
                self.runner.wake(job)
            except RoostError as error:   # held back (it keeps dying) or cannot run
                return {"delivered": False, "saved": True, "respawned": False, "error": error.text}
            return {"delivered": False, "saved": True, "respawned": True}
        if job.protocol:
            # Delivered over its connection at once when it has one; kept until its ack.
            self.queue(job, text, mode, request_id)
            self._feed_reply(job, text, mode, who, who_id)
            return {"delivered": connected, "saved": True}
        terminal = job.terminal
        reading = terminal.reading if terminal is not None else {}
        # The user's own answer to a dialog is typed at once: that is how a person
        # answers one (what is queued waits for a screen that waits for text). Text for
        # a waiting screen goes at once only while nothing else is typed or waits to be:
        # after one reply is submitted the screen works, and the next waits its turn.
        dialog = shows_dialog(reading)
        still = None
        if mode != "steer":
            still = (lambda: shows_dialog(terminal.reading)) if dialog else (lambda: self._free(job, terminal))
        if terminal is None or terminal.held or not (mode == "steer" or dialog or (self._free(job, terminal)
                                                                                   and not terminal.typing)):
            # An attached person's unsubmitted line holds everything (issue 19): it waits.
            return self._keep(job, text, mode, request_id, who, who_id)
        self._feed_reply(job, text, mode, who, who_id)
        # Its request id is kept once the program has the submit keys: a resend after a
        # kill in the check that follows is taken as the duplicate it is.
        self._before_typing(job, "reply")
        result = terminal.type_text(text, "steer", still=still,
                                    on_submit=lambda: self._kept(replies.remember, request_id, 0))
        if result.get("ready") is False:      # another typing came first: it waits its turn
            self.queue(job, text, mode, request_id)
            return {"delivered": False, "saved": True}
        if replies.answer_for(request_id) is None:
            replies.remember(request_id, 0)   # not submitted: a resend is not typed again either
        self._after_typing(job, result, text, "reply", mode, "dialog" if dialog else None)
        if result["submitted"]:
            return {"delivered": True, "saved": False}
        return {"delivered": False, "saved": False, "error": result["error"]}

    def type_for_roost(self, job, text, source, still):
        """roost's own text (a limit's resume, `source`), typed at once into a screen
        `still()` holds for, and never over an attached person's draft: it waits for the
        line to be submitted, cleared or left. The typing's result (type_text's), told to
        the typing hooks like a reply's."""
        terminal = job.terminal
        while True:
            if terminal is None or job.terminal is not terminal or terminal.closed or job.protocol:
                return {"submitted": False, "error": "the job has no terminal now"}
            if budget_held(job):
                return {"submitted": False, "ready": False, "error": "the job is parked at a budget"}
            terminal.wait_for(lambda: not terminal.held or terminal.closed)
            if not still():
                return {"submitted": False, "ready": False, "error": "the screen no longer shows what it did"}
            self._before_typing(job, source)
            result = terminal.type_text(text, "steer", still=still)
            if result.get("ready") is False and terminal.held:
                continue       # a person began a draft meanwhile: after it
            if result.get("ready") is not False:
                self._after_typing(job, result, text, source, "steer")
            return result

    def _free(self, job, terminal):
        """The screen waits for text and nothing is queued or being typed before it."""
        typist = self._typists.get(job.id)
        return (ready_for_text(terminal.reading) and not job.replies().pending
                and (typist is None or typist.dead))

    def _keep(self, job, text, mode, request_id, who=None, who_id=None):
        self.queue(job, text, mode, request_id)
        self._feed_reply(job, text, mode, who, who_id)
        return {"delivered": False, "saved": True}

    def _feed_reply(self, job, text, mode, who=None, who_id=None):
        self.registry.bus.publish("reply", f"reply: {text}", job.id, job.name, who=who, who_id=who_id, mode=mode)

    def queue(self, job, text, mode=None, request_id=None, kind=None, extra=None):
        """Keep a reply, or an agent item (`kind`), for the job (on disk before this
        returns) and get it delivered; returns its item."""
        before = job.row()
        item = job.replies().add(text, mode=mode, request_id=request_id, kind=kind, extra=extra)
        self.registry.notify(job, before)
        if job.protocol:
            self.links.flush(job)      # what is on disk now, this item and all before it
        self.kick(job)
        return item

    def wait_typed(self, job, seq, timeout):
        """Whether the item `seq` was typed (taken off the book) within `timeout` s."""
        deadline = time.monotonic() + timeout
        while any(item["seq"] == seq for item in job.replies().pending):
            if time.monotonic() >= deadline or job.terminal is None:
                return False
            event = self._typed.setdefault(job.id, gevent.event.Event())
            event.wait(min(0.5, max(0.0, deadline - time.monotonic())))
        return True

    def released(self, job):
        """A job's budget hold lifted: what waited is typed, or delivered, now."""
        if job.protocol:
            self.links.flush(job)
        self.kick(job)

    def kick(self, job):
        """Start the job's typing greenlet when it has replies waiting and a live screen."""
        if job.protocol or job.terminal is None or not job.running or budget_held(job):
            return
        typist = self._typists.get(job.id)
        if typist is not None and not typist.dead:
            return
        if not job.replies().ready:
            return
        self._typists[job.id] = gevent.spawn(self._type_queued, job, job.terminal)

    def resume(self, job):
        """A job adopted from the daemon before: what waits on its book is typed now."""
        self._adopted.add(job.id)
        self.kick(job)

    def _type_queued(self, job, terminal):
        """Types the job's waiting replies in order, each once the screen says it waits
        for text. The wait happens here, not in the terminal's typing (which holds its
        typing turn meanwhile), so a steer is typed at once even with replies queued.
        It ends with the terminal: what it had not typed waits for the next start."""
        replies = job.replies()
        try:
            while job.terminal is terminal and not terminal.closed and not job.protocol:
                # The user's replies and agent items on disk, in seq order.
                waiting = replies.ready
                if not waiting:
                    return
                item = waiting[0]
                text = item["text"]
                if item.get("kind") and not terminal.screen.bracketed_paste:
                    text = " ".join(text.split())   # each newline would be an Enter
                resuming = job.id in self._adopted
                if resuming and item.get("typed"):
                    # The daemon before this one wrote it and its submit keys into this very
                    # program, and died before it took it off the book: it is not typed twice.
                    self._adopted.discard(job.id)
                    log.info("job %s: reply %s was submitted before a restart: taken off", job.id, item["seq"])
                    replies.ack(item["seq"], exact=True)
                    continue
                terminal.wait_for(lambda: not terminal.held and (
                    (resuming and terminal.typed_not_submitted(text))
                    or ready_for_text(terminal.reading) or job.protocol))
                if budget_held(job):
                    return      # parked at a budget: the allow starts a typist again (released)
                self._adopted.discard(job.id)
                if job.terminal is not terminal or terminal.closed or terminal.eof.is_set() or job.protocol:
                    return
                if resuming and terminal.typed_not_submitted(text):
                    # The daemon before this one died between typing it and its submit keys:
                    # the text on the input line is roost's own, so only the keys are due.
                    log.info("job %s: reply %s was typed but not submitted before a restart: "
                             "submitting it", job.id, item["seq"])
                    result = terminal.type_text("", "steer", still=lambda: terminal.typed_not_submitted(text))
                else:
                    self._before_typing(job, item.get("kind") or "reply")
                    result = terminal.type_text(text, "steer", still=lambda: ready_for_text(terminal.reading),
                                                on_submit=lambda: self._kept(replies.mark_typed, item["seq"]))
                if result.get("ready") is False:
                    continue   # a reply typed at once came first: wait for the screen again
                if not result["submitted"] and (terminal.closed or terminal.eof.is_set()):
                    return   # it ended: the reply stays for its next start
                replies.ack(item["seq"], exact=True)
                typed = self._typed.pop(job.id, None)
                if typed is not None:
                    typed.set()
                self._after_typing(job, result, text, item.get("kind") or "reply", item.get("mode"))
        finally:
            if self._typists.get(job.id) is gevent.getcurrent():
                del self._typists[job.id]

    @staticmethod
    def _kept(write, *args):
        """A record of what was typed, written while the typing's check waits: a disk that
        fails it leaves the reply as it was (typed again after a kill), never unsubmitted."""
        try:
            write(*args)
        except OSError:
            log.exception("what was typed could not be kept")

    def _before_typing(self, job, source):
        for hook in list(self.on_typing):
            try:
                hook(job, source)
            except Exception:
                log.exception("job %s: a typing hook failed", job.id)

    def _after_typing(self, job, result, text, source, mode, into=None):
        for hook in list(self.on_typed):
            try:
                hook(job, text, source, mode, result, into)
            except Exception:
                log.exception("job %s: a typing hook failed", job.id)
        # typedOnce is outside the row: change() writes it and emits the row (queued too).
        fields = {"typedOnce": True}
        if result["submitted"]:
            if (job.record.get("error") or "").startswith("a reply was not submitted"):
                fields["error"] = None
        else:
            log.info("job %s: a reply was not submitted: %s", job.id, result["error"])
            fields["error"] = f"a reply was not submitted: {result['error']}"
            fields["replyFailedAt"] = now_ms()
        self.registry.change(job, **fields)
