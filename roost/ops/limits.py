"""Usage limits (issue 19 item 1): `limits`, the jobs parked at their usage limit in
groups (one provider, resets close together), and `limit-resume`, a job's resume at
its reset turned off or back on (roost's own ops, a person's: `roost limits`).
"""

from roost.errors import bad_request
from roost.jobs import limits
from roost.ops import args as read
from roost.ops import op


@op("limits")
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


@op("limit-resume")
def limit_resume(call):
    job = call.services.jobs.resolve(read.text(call.args, "id", min_length=1))
    resume = read.flag(call.args, "resume", default=None)
    if resume is None:
        raise bad_request("resume is required (true: resume it at its limit's reset; false: never)")
    # None, not True: the profile's and roost.json's settings decide again.
    call.services.jobs.change(job, limitResume=None if resume else False)
    call.services.limit_resumes.changed()
    return {"id": job.id, "resume": resume}
