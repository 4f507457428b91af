"""The sessions a session may message: jobs, and processes roost did not start that
joined with `peer_register` (an agent in the user's own terminal), each with its relation
to the one asking, from the spawn tree (`parentSession`, `rootSession`).

A protocol agent is a peer only when its hello said `agent-items` (it takes messages);
the concierge's job is not listed. A foreground peer leaves when its connection closes.
"""

import secrets

from roost.errors import UNAUTHORIZED, RoostError, bad_request, not_found

ITEMS = "agent-items"


class Peer:
    """One session as the peer ops see it."""

    __slots__ = ("id", "name", "role", "parent", "root", "cwd", "job", "session", "pid", "file")

    def __init__(self, peer_id, name, role, parent, root, cwd, job=None, session=None, pid=None, file=None):
        self.id = peer_id
        self.name = name
        self.role = role                # "job" or "foreground"
        self.parent = parent            # the session that spawned it, or None
        self.root = root or peer_id     # its spawn tree's root
        self.cwd = cwd
        self.job = job
        self.session = session          # a foreground peer's connection
        self.pid = pid
        self.file = file                # a foreground pi's session file

    @classmethod
    def of_job(cls, job):
        record = job.record
        return cls(job.id, job.name, "job", record.get("parentSession"), record.get("rootSession"),
                   record.get("cwd") or "", job=job)

    @property
    def takes_items(self):
        """It takes messages, reports and notices: a terminal agent (typed), a protocol
        agent whose hello said agent-items (or that has said no hello yet), a foreground
        peer."""
        if self.job is None or not self.job.protocol:
            return True
        capabilities = self.job.record.get("capabilities")
        return capabilities is None or ITEMS in capabilities


def relation(asker, other):
    if asker.parent is not None and other.id == asker.parent:
        return "parent"
    if other.parent is not None and other.parent == asker.id:
        return "child"
    if asker.parent is not None and other.parent == asker.parent:
        return "sibling"
    if other.root == asker.root:
        return "tree"
    return "external"


class PeerDirectory:
    def __init__(self, registry):
        self.registry = registry
        self.foreground = {}             # id -> Peer, while its connection is open

    # -- who asks -----------------------------------------------------------------------

    def of_session(self, session):
        """The peer a session speaks for (its job, or its foreground registration)."""
        for peer in self.foreground.values():
            if peer.session is session:
                return peer
        job = self.registry.get(session.job_id) if session.job_id else None
        if job is None:
            raise RoostError(UNAUTHORIZED, "this connection speaks for no session")
        return Peer.of_job(job)

    def register(self, session, name, cwd, pid, file=None):
        """A process roost did not start joins on this connection; it leaves with it."""
        earlier = [key for key, peer in self.foreground.items() if peer.session is session]
        for key in earlier:
            del self.foreground[key]
        peer_id = "fg-" + secrets.token_hex(4)
        self.foreground[peer_id] = Peer(peer_id, name, "foreground", None, None, cwd, session=session,
                                        pid=pid, file=file)
        session.on_close(lambda closed, peer_id=peer_id: self.foreground.pop(peer_id, None))
        return peer_id

    def is_open(self, peer_id):
        """Someone holds that session now: a connected foreground peer, a running job."""
        if peer_id in self.foreground:
            return True
        job = self.registry.get(peer_id)
        return job is not None and job.running

    # -- who may be asked -----------------------------------------------------------------

    def candidates(self, asker):
        found = [Peer.of_job(job) for job in self.registry.all()
                 if job.state is not None and job.id != asker.id and job.record.get("role") != "concierge"]
        found += [peer for peer in self.foreground.values() if peer.id != asker.id]
        return found

    def _by_id(self, asker, peer_id):
        if peer_id == asker.id:
            return None
        peer = self.foreground.get(peer_id)
        if peer is not None:
            return peer
        job = self.registry.get(peer_id)
        if job is None or job.state is None or job.record.get("role") == "concierge":
            return None
        return Peer.of_job(job)

    def listed(self, asker):
        """The PeerRows `peers` answers, oldest job first."""
        peers = [peer for peer in self.candidates(asker)
                 if peer.job is None or not peer.job.protocol or ITEMS in (peer.job.record.get("capabilities") or ())]
        return [self.row(asker, peer) for peer in peers]

    def row(self, asker, peer):
        if peer.job is None:
            return {"id": peer.id, "name": peer.name, "relation": relation(asker, peer), "role": "foreground",
                    "state": "live", "status": None, "waitingFor": None, "summary": None, "question": None,
                    "cwd": peer.cwd}
        record = peer.job.record
        return {"id": peer.id, "name": peer.name, "relation": relation(asker, peer), "role": "job",
                "state": record.get("state"), "status": record.get("status"),
                "waitingFor": record.get("waitingFor"), "summary": record.get("summary"),
                "question": record.get("question"), "cwd": peer.cwd}

    def find(self, asker, query):
        """A session by id, unique id prefix or unique name."""
        query = query.strip()
        exact = self._by_id(asker, query)
        if exact is not None:
            return exact
        peers = self.candidates(asker)
        for matches in ([peer for peer in peers if peer.id.startswith(query)],
                        [peer for peer in peers if peer.name == query]):
            if len(matches) == 1:
                return matches[0]
            if matches:
                shown = ", ".join(f"{peer.id} ({peer.name})" for peer in matches[:5])
                raise bad_request(f"{query!r} could mean {len(matches)} sessions: {shown}; use an id")
        raise not_found(f"no session {query!r} (`peers` lists them)")
