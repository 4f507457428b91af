"""Replies to a terminal agent: typed into its pty and submitted (issue 3 item 4).

Every reply that is not typed at once waits in the job's reply book (roost.replies,
`replies.json`): a followUp to an agent at work, a reply to an ended or reaped job
(which is started again for it), a profile's task with `task: "type"`, a respawn's
prompt. One greenlet per job types them in order, each once the screen says the agent
waits, and takes it off the book only after typing it (a crash in between types it
again: spec "Request ids"). A steer, or a followUp to an agent that waits with nothing
queued before it, is typed at once and answered with whether it was submitted.

A protocol agent (M31) takes its replies over the protocol, never typed: they wait in
the same book for the delivery that speaks to it (`JobRegistry.on_reply_queued`).
"""

import logging

import gevent

from roost.errors import RoostError
from roost.jobs.record import now_ms

log = logging.getLogger(__name__)

STOP_COMMAND = "/stop"


def book(registry, job):
    return job.replies()


def reply(registry, job, text, mode, request_id):
    """The `reply` op for one job; the answer per the spec's reply result."""
    replies = book(registry, job)
    if request_id is not None and replies.answer_for(request_id) is not None:
        # M36: taken once; a job that was to be started for it is started now.
        if not job.running and replies.queued:
            registry.wake(job)
        return {"delivered": False, "saved": True, "duplicate": True}
    if text.strip() == STOP_COMMAND:
        # spec: a reply of /stop is never delivered: the daemon stops the job.
        registry.runner.stop(job)
        return {"delivered": False, "saved": False, "stopped": True}
    connected = job.protocol and _agent_connected(registry, job)
    if job.protocol and text.startswith("/") and not connected:
        # spec "Replies": a command is meaningful live only.
        raise RoostError("unsupported", "a reply starting with / is a command for the agent, "
                                        "and the agent is not connected")
    if not job.running:
        queue(registry, job, text, mode, request_id)
        try:
            registry.wake(job)
        except RoostError as error:   # held back (it keeps dying) or cannot run
            return {"delivered": False, "saved": True, "respawned": False, "error": error.text}
        return {"delivered": False, "saved": True, "respawned": True}
    if job.protocol:
        # Delivered over its connection (on_reply_queued) at once when it has one; kept
        # until its ack either way.
        queue(registry, job, text, mode, request_id)
        return {"delivered": connected, "saved": True}
    terminal = job.terminal
    waits = terminal is not None and terminal.reading.get("state") != "working"
    if terminal is None or not (mode == "steer" or (waits and not replies.queued)):
        queue(registry, job, text, mode, request_id)
        return {"delivered": False, "saved": True}
    result = terminal.type_text(text, "steer")
    replies.remember(request_id, 0)
    _after_typing(registry, job, result)
    if result["submitted"]:
        return {"delivered": True, "saved": False}
    return {"delivered": False, "saved": False, "error": result["error"]}


def _agent_connected(registry, job):
    links = getattr(registry.daemon, "agent_links", None)
    return bool(links is not None and links.connected(job))


def queue(registry, job, text, mode=None, request_id=None, kind=None):
    """Keep a reply for the job (on disk before this returns) and get it typed."""
    before = job.row()
    book(registry, job).add(text, mode=mode, request_id=request_id, kind=kind)
    registry.notify(job, before)
    for hook in list(registry.on_reply_queued):
        try:
            hook(job)
        except Exception:
            log.exception("a reply hook failed")
    kick(registry, job)


def kick(registry, job):
    """Start the job's typing greenlet when it has replies waiting and a live screen."""
    if job.protocol or job.terminal is None or not job.running:
        return
    if job.reply_worker is not None and not job.reply_worker.dead:
        return
    if not book(registry, job).queued:
        return
    job.reply_worker = gevent.spawn(_type_queued, registry, job, job.terminal)


def _type_queued(registry, job, terminal):
    """Types the job's waiting replies in order, each once the screen says it waits.
    The wait happens here, not in the terminal's typing (which holds the terminal's
    typing turn meanwhile), so a steer is typed at once even with replies queued. The
    runner kills this greenlet when the job's terminal ends."""
    replies = book(registry, job)
    while job.terminal is terminal and not terminal.closed:
        waiting = [item for item in replies.pending if not item.get("kind")]
        if not waiting:
            return
        item = waiting[0]
        job.waiting.wait()
        if job.terminal is not terminal or terminal.closed:
            return
        result = terminal.type_text(item["text"], "steer")
        if not result["submitted"] and (terminal.closed or terminal.eof.is_set()):
            return   # it ended: the reply stays for its next start
        replies.ack(item["seq"], exact=True)
        _after_typing(registry, job, result)


def _after_typing(registry, job, result):
    # typedOnce is outside the row: change() writes it and emits the row (queued too).
    fields = {"typedOnce": True}
    if result["submitted"]:
        if (job.record.get("error") or "").startswith("a reply was not submitted"):
            fields["error"] = None
    else:
        log.info("job %s: a reply was not submitted: %s", job.id, result["error"])
        fields["error"] = f"a reply was not submitted: {result['error']}"
        fields["replyFailedAt"] = now_ms()
    registry.change(job, **fields)
