"""A job's flight recorder over the socket (issue 19 item 3): `timeline {id, limit?}`
gives its entries (roost.jobs.timeline), `explain {id}` the paragraph that says why its
row says what it says now (roost.jobs.explain). A person's and the concierge's."""

from roost.contract import Anything, Integer, ListOf, Text
from roost.jobs import explain as explaining
from roost.jobs import timeline as recorded
from roost.ops import op
from roost.ops.jobs import FINDS, JOB
from roost.ops.shapes import JOB_ROW

MAX_ENTRIES = 5000


def _find(call):
    return call.services.jobs.resolve(call.args["id"])


@op("timeline", args={"id": JOB, "limit": Integer(f"The newest this many (at most {MAX_ENTRIES}).", minimum=1,
                                                  default=MAX_ENTRIES)},
    result={"id": Text(), "name": Text(),
            "entries": ListOf(Anything("One entry {at, kind, ...} (roost.jobs.timeline).", object=True))},
    codes=FINDS)
def timeline(call):
    job = _find(call)
    limit = min(call.args["limit"], MAX_ENTRIES)
    call.services.timelines.flush()      # what was recorded before this call is in it
    return {"id": job.id, "name": job.name, "entries": recorded.read(job.job_dir, limit)}


@op("explain", args={"id": JOB}, result={
    "id": Text(), "name": Text(), "text": Text("Why its row says what it says now, in words."),
    "why": Anything("The screen reader's last reason (a live terminal agent's), or null.", nullable=True),
    "row": JOB_ROW,
}, codes=FINDS)
def explain(call):
    job = _find(call)
    reading = job.terminal.reading if job.terminal is not None and job.running else None
    plan = call.services.limit_resumes.plan(job)
    return {"id": job.id, "name": job.name, "text": explaining.explain(job, limit_plan=plan),
            "why": (reading or {}).get("why"), "row": job.row()}
