"""Which session speaks for which protocol job, and the delivery of its replies (spec
"Replies: the deliver event and ack").

The session an accepted report came through becomes the job's: its replies are sent
there as `deliver` events. Every new reporting session gets all pending replies again,
in seq order; a reply queued while the agent is connected goes out as soon as it is on
disk. Each link remembers what it was sent, so every item reaches a connection once, in
seq order, whatever order the book's writes finish in, and an ack can only ever cover
what the agent was sent. Nothing is taken off the book here: only the agent's ack does
that (roost.ops.agents).
"""

import logging

log = logging.getLogger(__name__)


class AgentLinks:
    def __init__(self, registry):
        self.registry = registry
        self.by_job = {}                      # job id -> Session
        self.sent = {}                        # job id -> the seqs its current session was sent
        self.agent_items = set()              # job ids whose agent said agentItems: true

    def session(self, job):
        session = self.by_job.get(job.id)
        if session is not None and session.gone:
            return None
        return session

    def connected(self, job):
        return self.session(job) is not None

    def bind(self, job, session):
        """Make `session` the job's; on a new link, send every pending reply again."""
        if self.by_job.get(job.id) is session:
            return False
        self.by_job[job.id] = session
        self.sent[job.id] = set()
        session.on_close(lambda closed, job_id=job.id: self._unbind(job_id, closed))
        log.info("job %s: an agent connection reports for it", job.id)
        self.flush(job)
        return True

    def _unbind(self, job_id, session):
        if self.by_job.get(job_id) is session:
            del self.by_job[job_id]
            self.sent.pop(job_id, None)
            log.info("job %s: its agent connection closed", job_id)

    def flush(self, job):
        """Send the job's connected agent every item on disk it was not sent yet, in seq
        order. Called whenever the book may hold something new for it; sending twice is
        impossible, so calling it too often costs nothing."""
        session = self.session(job)
        if session is None or job.record.get("budgetHold"):
            return      # parked at a budget (issue 29): delivered once the person allows more
        sent = self.sent.setdefault(job.id, set())
        takes_items = job.id in self.agent_items
        ready = job.replies().ready
        for item in ready:
            if item["seq"] in sent or (item.get("kind") and not takes_items):
                continue   # peer items only to an agent that takes them (agentItems: true)
            sent.add(item["seq"])
            session.send_event(_deliver_event(job, item))
        if len(sent) > 2 * len(ready) + 16:
            sent.intersection_update(item["seq"] for item in ready)   # acked ones go


def _deliver_event(job, item):
    event = {"event": "deliver", "id": job.id, "seq": item["seq"], "text": item["text"]}
    for field in ("mode", "kind", "from", "relation"):
        if item.get(field) is not None:
            event[field] = item[field]
    return event
