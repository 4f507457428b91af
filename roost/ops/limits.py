"""Usage limits (issue 19 item 1): `limits`, the jobs parked at their usage limit in
groups (one provider, resets close together), and `limit-resume`, a job's resume at
its reset turned off or back on (roost's own ops, a person's: `roost limits`).
"""

from roost.contract import Flag, ListOf, Number, Shape, Text
from roost.errors import CONFLICT
from roost.jobs import limits
from roost.ops import op
from roost.ops.jobs import FINDS, JOB

LIMITED_JOB = Shape({
    "id": Text(), "name": Text(), "resetsAt": Number(nullable=True),
    "resume": Flag("It will be resumed at the reset."), "resumeText": Text("What it is told then.", nullable=True),
    "resumeAt": Number(nullable=True), "resumed": Flag("Resumed already for this limit."),
    "why": Text("Why it will not be resumed.", nullable=True),
})
LIMIT_GROUP = Shape({"provider": Text(nullable=True), "resetsAt": Number(nullable=True), "jobs": ListOf(LIMITED_JOB)})


@op("limits", args={}, result={"groups": ListOf(LIMIT_GROUP, "One provider's jobs whose resets are close together.")})
def limits_op(call):
    services = call.services
    resumer = services.limit_resumes
    shown = []
    for provider, resets_at, jobs in limits.groups(services.jobs.all()):
        entries = []
        for job in jobs:
            text, why_not, resumed = resumer.state(job)
            entries.append({"id": job.id, "name": job.name, "resetsAt": job.record["resetsAt"],
                            "resume": text is not None and not resumed, "resumeText": text,
                            "resumeAt": resumer.due_at(job), "resumed": resumed,
                            "why": "resumed already for this limit" if resumed else why_not})
        shown.append({"provider": provider, "resetsAt": resets_at, "jobs": entries})
    return {"groups": shown}


@op("limit-resume", args={"id": JOB, "resume": Flag("true: resume it at its limit's reset; false: never.")},
    result={"id": Text(), "resume": Flag()}, codes=FINDS + (CONFLICT,))
def limit_resume(call):
    job = call.services.jobs.resolve(call.args["id"])
    resume = call.args["resume"]
    # None, not True: the profile's and roost.json's settings decide again.
    call.services.jobs.change(job, limitResume=None if resume else False)
    call.services.limit_resumes.changed()
    return {"id": job.id, "resume": resume}
