"""Which session speaks for which protocol job, and the delivery of its replies (spec
"Replies: the deliver event and ack").

The session an accepted report came through becomes the job's: its replies are sent
there as `deliver` events. Every new reporting session gets all pending replies again,
in order; a reply queued while the agent is connected goes out at once. Nothing is
taken off the book here: only the agent's ack does that (roost.ops.agents).
"""

import logging

log = logging.getLogger(__name__)


class AgentLinks:
    def __init__(self, registry):
        self.registry = registry
        self.by_job = {}                      # job id -> Session
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
        session.on_close(lambda closed, job_id=job.id: self._unbind(job_id, closed))
        log.info("job %s: an agent connection reports for it", job.id)
        self.send_pending(job)
        return True

    def _unbind(self, job_id, session):
        if self.by_job.get(job_id) is session:
            del self.by_job[job_id]
            log.info("job %s: its agent connection closed", job_id)

    def send_pending(self, job):
        session = self.session(job)
        if session is None:
            return
        for item in job.replies().pending:
            self._send(job, session, item)

    def send_latest(self, job):
        """A reply just went into the book: an agent that is connected gets it now."""
        session = self.session(job)
        if session is None:
            return
        pending = job.replies().pending
        if pending:
            self._send(job, session, pending[-1])

    def _send(self, job, session, item):
        if item.get("kind") and job.id not in self.agent_items:
            return   # peer items only to an agent that takes them (agentItems: true)
        event = {"event": "deliver", "id": job.id, "seq": item["seq"], "text": item["text"]}
        for field in ("mode", "kind", "from", "relation"):
            if item.get(field) is not None:
                event[field] = item[field]
        session.send_event(event)
