"""Who is on one connection, and what it holds.

The server makes one Session per connection and closes it once, when the connection
ends. What the session is (its caller, the job it speaks for, its hello) is read by the
op table's one caller check; what it holds (attachments to terminals, and later
subscriptions and watches) is released in `close`, in one place, whatever closed it.
"""

import logging

from roost.ops.callers import CONCIERGE, IN_JOB, PERSON, SESSION

log = logging.getLogger(__name__)


class Session:
    __slots__ = ("caller", "inside", "peer_pid", "job_id", "hello", "attachments", "closed", "_outlet",
                 "_on_close")

    def __init__(self, outlet, inside=None, peer_pid=None):
        """`outlet` is the connection: send_event(event), unsent, closed. `inside`: where
        its process runs when that is inside a job (roost.jobs.origins.Inside), read at
        accept from the peer's credentials; such a connection is never the person.
        `peer_pid`: that process (SO_PEERCRED), what it says of itself notwithstanding."""
        self.inside = inside
        self.peer_pid = peer_pid
        self.caller = PERSON if inside is None else IN_JOB
        self.job_id = None
        self.hello = None            # what the agent said in its hello (protocol, agent, capabilities)
        self.attachments = {}        # job id -> an attachment to its terminal (release() ends it)
        self.closed = False
        self._outlet = outlet
        self._on_close = []

    # -- what it is -------------------------------------------------------------------

    def identify(self, caller, job_id=None):
        """The connection says who it is. A session never becomes a person again, and a
        connection from inside a job never becomes one."""
        if caller == PERSON and (self.caller in (SESSION, CONCIERGE) or self.inside is not None):
            return
        self.caller = caller
        if job_id is not None:
            self.job_id = job_id

    @property
    def capabilities(self):
        return list(self.hello["capabilities"]) if self.hello else []

    # -- talking to it ----------------------------------------------------------------

    def send_event(self, event):
        self._outlet.send_event(event)

    def send_line(self, data):
        """A push already encoded (one encoding for many subscribers)."""
        self._outlet.send_line(data)

    @property
    def unsent(self):
        """Bytes queued for this client that its socket has not taken yet."""
        return self._outlet.unsent

    @property
    def gone(self):
        return self.closed or self._outlet.closed

    # -- its end ----------------------------------------------------------------------

    def on_close(self, callback):
        """`callback(session)` once, when the connection ends."""
        if self.closed:
            callback(self)
        else:
            self._on_close.append(callback)

    def close(self):
        if self.closed:
            return
        self.closed = True
        attachments, self.attachments = self.attachments, {}
        for attachment in attachments.values():
            _quietly(attachment.release)
        callbacks, self._on_close = self._on_close, []
        for callback in callbacks:
            _quietly(callback, self)


def _quietly(fn, *args):
    try:
        fn(*args)
    except Exception:
        log.exception("releasing what a connection held failed")
