"""The agent protocol's own ops: report and ack (spec "report", "Replies", M31).

An agent proves it speaks for a job with the job's token, compared in constant time and
good for that job only. An accepted report sets the row (a full snapshot: what is left
out is null), makes the connection a Session and the job's, and from then on the reports,
not the screen, own the row.
"""

import hmac

from roost import codec
from roost.contract import Anything, Choice, Flag, Integer, ListOf, Shape, Text
from roost.errors import BAD_REQUEST, CONFLICT, NOT_FOUND, UNAUTHORIZED, RoostError
from roost.jobs.launch import RESERVED_NAMES, fold_name
from roost.ops import callers, op

STATES = ("working", "blocked", "done", "failed")
STATUSES = ("busy", "waiting", "idle")
WAITING_FOR = ("dialog", "question", "first-prompt", "limit")
# context and usage are objects roost keeps on the row and sends to every subscriber with
# each change: bounded, refused past these (issue 16).
MAX_INFO_BYTES = 4096      # encoded
MAX_INFO_DEPTH = 4         # {"cost": {"input": 1}} is 2


def _cut_at(limit, doc=None):
    """The spec's limits: longer text is cut, not refused."""
    return Text(doc, max_length=limit, cut=True, default=None)


WORKER_REPORT = Shape({
    "state": Choice(STATES),
    "status": Choice(STATUSES, nullable=True, default=None),
    "waitingFor": Choice(WAITING_FOR, "With blocked; issue 19: `limit`, stopped at its usage limit.", nullable=True,
                         default=None),
    "summary": _cut_at(500, "The row's text."),
    "question": _cut_at(2000),
    "choices": ListOf(Text(max_length=200, cut=True), "The answers it offers.", max_items=20, cut=True, default=[]),
    "tool": _cut_at(100, "The tool running."),
    "error": _cut_at(1000, "What went wrong, with failed."),
    "name": Text("The session's name (one line, at most 200; null: roost names it).", default=None),
    "model": _cut_at(200),
    "thinking": _cut_at(100),
    "context": Anything(f"ContextInfo; at most {MAX_INFO_BYTES} bytes as JSON, {MAX_INFO_DEPTH} levels deep.",
                        object=True, default=None, lenient=True),
    "usage": Anything(f"What it spent; at most {MAX_INFO_BYTES} bytes as JSON, {MAX_INFO_DEPTH} levels deep.",
                      object=True, default=None, lenient=True),
    "resetsAt": Integer("issue 19: with waitingFor limit, when the limit resets (ms since the epoch).", minimum=1,
                        default=None, lenient=True),
    "agentItems": Flag("M9: it takes agent messages and reports as deliveries.", default=False, lenient=True),
}, name="WorkerReport", doc="What an agent reports about itself (a full snapshot every time).", prefix="report.")
# An agent's job and the token that proves it speaks for it.
SPEAKER = {"id": Text("The job's id.", min_length=1), "token": Text("The job's token.")}
SPEAKER_CODES = (NOT_FOUND, UNAUTHORIZED)


def caller_of(job):
    """M44: the concierge's job speaks as the Concierge; every other job as a Session."""
    return callers.CONCIERGE if job.record.get("role") == "concierge" else callers.SESSION


def job_for(call):
    """The job named by args.id whose token args.token carries, from a connection that may
    carry it: a token counts only from its own job's processes, or from the person's
    (issue 26: a job that read another's token cannot speak for it)."""
    job_id, token = call.args["id"], call.args["token"]
    job = call.services.jobs.get(job_id)
    if job is None:
        raise RoostError(NOT_FOUND, f"no job {job_id}")
    if not hmac.compare_digest(token.encode("utf-8"), job.token.encode("utf-8")):
        raise RoostError(UNAUTHORIZED, "this token is not the job's: stop speaking for it")
    inside = call.session.inside
    if inside is not None and (inside.job is None or inside.job.id != job.id):
        raise RoostError(UNAUTHORIZED, f"job {job.id}'s token is refused from {inside.describe()}: a token "
                                       "counts only from its own job's processes")
    return job


def row_fields(report):
    """The row's fields from a checked report (WorkerReport): null-filled, its name folded,
    context and usage bounded."""
    fields = {field: report[field] for field in ("status", "waitingFor", "choices", "summary", "question", "tool",
                                                 "error", "model", "thinking")}
    # issue 19: an agent at its usage limit may say when it resets (ms since the epoch).
    fields["resetsAt"] = report["resetsAt"] if fields["waitingFor"] == "limit" else None
    name = fold_name(report["name"]) if report["name"] is not None else None   # one line, at most 200
    if name and name.lower() not in RESERVED_NAMES:
        fields["name"] = name
    for field in ("context", "usage"):
        fields[field] = _info(report[field], field)
    return report["state"], fields


def _info(value, field):
    if value is None:
        return None
    if _depth(value) > MAX_INFO_DEPTH:
        raise RoostError(BAD_REQUEST, f"report.{field} nests deeper than {MAX_INFO_DEPTH} levels")
    size = len(codec.encode(value))
    if size > MAX_INFO_BYTES:
        raise RoostError(BAD_REQUEST, f"report.{field} is {size} bytes as JSON: at most {MAX_INFO_BYTES}")
    return value


def _depth(value):
    """How deep objects and lists nest in `value` (a scalar is 0); the codec bounds it."""
    if isinstance(value, dict):
        return 1 + max(map(_depth, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(_depth, value), default=0)
    return 0


@op("report", args=dict(SPEAKER, report=WORKER_REPORT), result={}, codes=SPEAKER_CODES + (CONFLICT,))
def report(call):
    job = job_for(call)
    snapshot = call.args["report"]
    state, fields = row_fields(snapshot)
    if not job.speaks:
        raise RoostError(UNAUTHORIZED, f"job {job.id} has ended: stop speaking for it")
    session = call.session
    if session.hello is not None:
        fields["capabilities"] = session.capabilities
    links = call.services.links
    takes_items = snapshot["agentItems"]
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


@op("ack", args=dict(SPEAKER, seq=Integer("Every user reply up to it is handled.", minimum=0),
                    exact=Flag("Only the agent item with this seq (peer items are acked one by one).", default=False)),
    result={}, codes=SPEAKER_CODES)
def ack(call):
    job = job_for(call)
    seq = call.args["seq"]
    exact = call.args["exact"]
    before = job.row()
    # Only what this job's agent connection was sent: a reply on its way is not covered.
    sent = call.services.links.sent.get(job.id, set())
    if job.replies().ack(seq, exact=exact, sent=sent):
        call.services.jobs.notify(job, before)
    return {}
