"""The agent protocol's own ops: report and ack (spec "report", "Replies", M31).

An agent proves it speaks for a job with the job's token, compared in constant time and
good for that job only. An accepted report sets the row (a full snapshot: what is left
out is null), makes the connection a Session and the job's, and from then on the reports,
not the screen, own the row.
"""

import hmac

from roost import codec
from roost.errors import RoostError
from roost.jobs.launch import RESERVED_NAMES, fold_name
from roost.ops import args as read
from roost.ops import callers, op

STATES = ("working", "blocked", "done", "failed")
STATUSES = ("busy", "waiting", "idle")
WAITING_FOR = ("dialog", "question", "first-prompt", "limit")
# The spec's limits: longer text is cut, not refused.
LIMITS = {"summary": 500, "question": 2000, "tool": 100, "error": 1000, "model": 200,
          "thinking": 100}
MAX_CHOICES = 20
MAX_CHOICE = 200
# context and usage are objects roost keeps on the row and sends to every subscriber with
# each change: bounded, refused past these (issue 16).
MAX_INFO_BYTES = 4096      # encoded
MAX_INFO_DEPTH = 4         # {"cost": {"input": 1}} is 2


def caller_of(job):
    """M44: the concierge's job speaks as the Concierge; every other job as a Session."""
    return callers.CONCIERGE if job.record.get("role") == "concierge" else callers.SESSION


def job_for(call):
    """The job named by args.id whose token args.token carries, from a connection that may
    carry it: a token counts only from its own job's processes, or from the person's
    (issue 26: a job that read another's token cannot speak for it)."""
    job_id = read.text(call.args, "id", min_length=1)
    token = read.text(call.args, "token")
    job = call.services.jobs.get(job_id)
    if job is None:
        raise RoostError("not_found", f"no job {job_id}")
    if not hmac.compare_digest(token.encode("utf-8"), job.token.encode("utf-8")):
        raise RoostError("unauthorized", "this token is not the job's: stop speaking for it")
    inside = call.session.inside
    if inside is not None and (inside.job is None or inside.job.id != job.id):
        raise RoostError("unauthorized", f"job {job.id}'s token is refused from {inside.describe()}: a token "
                                         "counts only from its own job's processes")
    return job


def _cut(value, field):
    if value is None:
        return None
    if not isinstance(value, str):
        raise RoostError("bad_request", f"report.{field} must be a string or null")
    if field == "name":
        return fold_name(value)   # one line, at most 200 (like rename)
    return value[:LIMITS[field]]


def _enum(value, field, options):
    if value is None:
        return None
    if value not in options:
        raise RoostError("bad_request", f"report.{field} must be one of {', '.join(options)} or null")
    return value


def row_fields(report):
    """The row's fields from a report: checked, cut to the spec's limits, null-filled."""
    state = report.get("state")
    if state not in STATES:
        raise RoostError("bad_request", f"report.state must be one of {', '.join(STATES)}")
    choices = report.get("choices") or []
    if not isinstance(choices, list) or not all(isinstance(choice, str) for choice in choices):
        raise RoostError("bad_request", "report.choices must be a list of strings")
    fields = {
        "status": _enum(report.get("status"), "status", STATUSES),
        "waitingFor": _enum(report.get("waitingFor"), "waitingFor", WAITING_FOR),
        "choices": [choice[:MAX_CHOICE] for choice in choices[:MAX_CHOICES]],
    }
    # issue 19: an agent at its usage limit may say when it resets (ms since the epoch).
    resets_at = report.get("resetsAt")
    fields["resetsAt"] = resets_at if fields["waitingFor"] == "limit" and isinstance(resets_at, int) \
        and not isinstance(resets_at, bool) and resets_at > 0 else None
    for field in ("summary", "question", "tool", "error", "model", "thinking"):
        fields[field] = _cut(report.get(field), field)
    name = _cut(report.get("name"), "name")
    if name and name.lower() not in RESERVED_NAMES:
        fields["name"] = name
    for field in ("context", "usage"):
        fields[field] = _info(report.get(field), field)
    return state, fields


def _info(value, field):
    if not isinstance(value, dict):
        return None
    if _depth(value) > MAX_INFO_DEPTH:
        raise RoostError("bad_request", f"report.{field} nests deeper than {MAX_INFO_DEPTH} levels")
    size = len(codec.encode(value))
    if size > MAX_INFO_BYTES:
        raise RoostError("bad_request", f"report.{field} is {size} bytes as JSON: at most {MAX_INFO_BYTES}")
    return value


def _depth(value):
    """How deep objects and lists nest in `value` (a scalar is 0); the codec bounds it."""
    if isinstance(value, dict):
        return 1 + max(map(_depth, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(_depth, value), default=0)
    return 0


@op("report")
def report(call):
    job = job_for(call)
    snapshot = read.mapping(call.args, "report")
    state, fields = row_fields(snapshot)
    if not job.speaks:
        raise RoostError("unauthorized", f"job {job.id} has ended: stop speaking for it")
    session = call.session
    if session.hello is not None:
        fields["capabilities"] = session.capabilities
    links = call.services.links
    takes_items = snapshot.get("agentItems") is True
    newly_takes_items = takes_items and job.id not in links.agent_items
    if takes_items:
        links.agent_items.add(job.id)
    else:
        links.agent_items.discard(job.id)
    if not job.protocol:
        # It speaks the protocol (it has the job's token and reports): from now on its
        # replies are delivered to it, not typed, as for a profile's `protocol: true`.
        job.launch["protocol"] = True
        fields["launch"] = job.launch
    # Bound before the row changes: whoever sees the row say what this agent takes (a
    # peer listing it, while its record is written) finds it connected.
    session.identify(caller_of(job), job.id)
    if not links.bind(job, session) and newly_takes_items:
        links.flush(job)       # the items held back while it took none
    call.services.jobs.change(job, state=state, reported=True, **fields)
    return {}


@op("ack")
def ack(call):
    job = job_for(call)
    seq = read.integer(call.args, "seq", minimum=0)
    exact = read.flag(call.args, "exact")
    before = job.row()
    # Only what this job's agent connection was sent: a reply on its way is not covered.
    sent = call.services.links.sent.get(job.id, set())
    if job.replies().ack(seq, exact=exact, sent=sent):
        call.services.jobs.notify(job, before)
    return {}
