"""The feed's ops (M43): `events {after?, limit?, id?}` -> {events, cursor}, the hub's and
the CLI's (a session's connection is refused; the concierge's is not), and `subscribe`,
which makes a hub's connection one that gets pushes (roost.events.subscribers)."""

from roost.contract import Integer, ListOf, Text
from roost.errors import RoostError
from roost.events.feed import KEEP
from roost.ops import op
from roost.ops.shapes import ROOST_EVENT

DEFAULT_LIMIT = 100


@op("events", quick=True, args={
    "after": Integer("The seq last seen: the events after it, oldest first.", default=None),
    "limit": Integer(f"At most this many (at most {KEEP}); without `after`: the newest {DEFAULT_LIMIT}.", minimum=0,
                     default=None),
    "id": Text("Only the events about this job or caused by it (an id, prefix or name; a removed job's full id).",
               min_length=1, default=None),
}, result={"events": ListOf(ROOST_EVENT), "cursor": Integer("The last seq given (give it as `after` next).")})
def events(call):
    after, limit, job_id = call.args["after"], call.args["limit"], call.args["id"]
    limit = min(limit, KEEP) if limit is not None else (None if after is not None else DEFAULT_LIMIT)
    if job_id is not None:
        job_id = _job_id(call.services.jobs, job_id)
    found, cursor = call.services.feed.read(after, limit, job_id)
    return {"events": found, "cursor": cursor}


def _job_id(jobs, query):
    """A job on record by id, prefix or name; else the query itself, the full id of a job
    that was removed (its events stay in the feed)."""
    try:
        return jobs.resolve(query).id
    except RoostError:
        return query


@op("subscribe", args={}, result={})
def subscribe(call):
    call.services.subscribers.add(call.session)
    return {}
