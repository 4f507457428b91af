"""The feed's ops (M43): `events {after?, limit?, id?}` -> {events, cursor}, the hub's and
the CLI's (a session's connection is refused; the concierge's is not), and `subscribe`,
which makes a hub's connection one that gets pushes (roost.events.subscribers)."""

from roost.errors import RoostError, bad_request
from roost.events.feed import KEEP
from roost.ops import args as read
from roost.ops import op

DEFAULT_LIMIT = 100


@op("events", quick=True)
def events(call):
    after = read.number(call.args, "after", default=None)
    limit = read.number(call.args, "limit", default=None)
    if limit is not None and (limit < 0 or limit != int(limit)):
        raise bad_request("limit must be a whole number, 0 or more")
    if after is not None and after != int(after):
        raise bad_request("after must be a seq, a whole number")
    limit = min(int(limit), KEEP) if limit is not None else (None if after is not None else DEFAULT_LIMIT)
    job_id = read.text(call.args, "id", default=None, min_length=1)
    if job_id is not None:
        job_id = _job_id(call.services.jobs, job_id)
    found, cursor = call.services.feed.read(int(after) if after is not None else None, limit, job_id)
    return {"events": found, "cursor": cursor}


def _job_id(jobs, query):
    """A job on record by id, prefix or name; else the query itself, the full id of a job
    that was removed (its events stay in the feed)."""
    try:
        return jobs.resolve(query).id
    except RoostError:
        return query


@op("subscribe")
def subscribe(call):
    call.services.subscribers.add(call.session)
    return {}
