"""Which connection speaks for which protocol job, and the delivery of its replies
(spec "Replies: the deliver event and ack").

The connection a job's accepted report came through becomes the job's: its replies are
sent there as `deliver` events. Every new reporting connection gets all pending replies
again, in order; a reply queued while the agent is connected goes out at once. Nothing
is taken off the book here: only the agent's ack does that (ops/agents.py).
"""

import logging

from roost.ops import callers

log = logging.getLogger(__name__)


class AgentLinks:
    def __init__(self, registry):
        self.registry = registry
        self.by_job = {}                      # job id -> Connection
        self.agent_items = set()              # job ids whose agent said agentItems: true
        registry.on_reply_queued.append(self._queued)

    def connection(self, job):
        conn = self.by_job.get(job.id)
        if conn is not None and conn.closed:
            return None
        return conn

    def connected(self, job):
        return self.connection(job) is not None

    def bind(self, job, conn):
        """Make `conn` the job's; on a new link, send every pending reply again."""
        if self.by_job.get(job.id) is conn:
            return False
        self.by_job[job.id] = conn
        conn.identify(callers.SESSION, job.id)
        conn.on_close.append(lambda closed, job_id=job.id: self._unbind(job_id, closed))
        log.info("job %s: an agent connection reports for it", job.id)
        self.send_pending(job)
        return True

    def _unbind(self, job_id, conn):
        if self.by_job.get(job_id) is conn:
            del self.by_job[job_id]
            log.info("job %s: its agent connection closed", job_id)

    def send_pending(self, job):
        conn = self.connection(job)
        if conn is None:
            return
        for item in job.replies().pending:
            self._send(job, conn, item)

    def _queued(self, job):
        # A reply just went into the book: an agent that is connected gets it now.
        if not job.protocol:
            return
        conn = self.connection(job)
        if conn is None:
            return
        pending = job.replies().pending
        if pending:
            self._send(job, conn, pending[-1])

    def _send(self, job, conn, item):
        if item.get("kind") and job.id not in self.agent_items:
            return   # peer items only to an agent that takes them (agentItems: true)
        event = {"event": "deliver", "id": job.id, "seq": item["seq"], "text": item["text"]}
        for field in ("mode", "kind", "from", "relation"):
            if item.get(field) is not None:
                event[field] = item[field]
        conn.send_event(event)
