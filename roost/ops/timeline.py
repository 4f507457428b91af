"""A job's flight recorder over the socket (issue 19 item 3): `timeline {id, limit?}`
gives its entries (roost.jobs.timeline), `explain {id}` the paragraph that says why its
row says what it says now (roost.jobs.explain). A person's and the concierge's."""

from roost.jobs import explain as explaining
from roost.jobs import timeline as recorded
from roost.ops import args as read
from roost.ops import op

MAX_ENTRIES = 5000


def _find(call):
    return call.services.jobs.resolve(read.text(call.args, "id", min_length=1))


@op("timeline")
def timeline(call):
    job = _find(call)
    limit = min(read.integer(call.args, "limit", default=MAX_ENTRIES, minimum=1), MAX_ENTRIES)
    call.services.timelines.flush()      # what was recorded before this call is in it
    return {"id": job.id, "name": job.name, "entries": recorded.read(job.job_dir, limit)}


@op("explain")
def explain(call):
    job = _find(call)
    reading = job.terminal.reading if job.terminal is not None and job.running else None
    plan = call.services.limit_resumes.plan(job)
    return {"id": job.id, "name": job.name, "text": explaining.explain(job, limit_plan=plan),
            "why": (reading or {}).get("why"), "row": job.row()}
