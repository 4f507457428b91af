"""`notify` (roost's own, issue 18):

    {action: "test"} -> {sinks: [{sink, ok, error?}]}: one notification to each sink
        roost.json names (roost.notify), answered once each has sent it or failed;
    {action: "focus", id: ID | null} -> {id}: the job this connection's person looks at
        (a hub's selection while its terminal has the focus; null: none), to which no
        desktop notification goes; forgotten when the connection ends;
    {action: "later", id, minutes} -> {id, until}: "Not now" (issue 30): the job's wait is
        told again, as a reminder, in `minutes` (more than 0, at most 1440); `until` (ms since the epoch)
        is null when the job waits for nothing."""

from roost.contract import Flag, Integer, ListOf, Number, Shape, Text
from roost.errors import bad_request
from roost.ops import Action, op
from roost.ops.jobs import FINDS, JOB

SINK_RESULT = Shape({"sink": Text("The sink's name in roost.json."), "ok": Flag(),
                     "error": Text("Why it failed.", optional=True)})

MAX_LATER_MINUTES = 24 * 60


@op("notify", by="action", actions={
    "test": Action(result={"sinks": ListOf(SINK_RESULT)},
                   doc="One notification to each sink roost.json names, answered once each has sent it or failed."),
    "focus": Action({"id": JOB.but(default=None, doc="The job the person looks at; null: none.")},
                    result={"id": Text(nullable=True)}, codes=FINDS,
                    doc="The job this connection's person looks at: no desktop notification goes for it."),
    "later": Action({"id": JOB,
                     "minutes": Number(f"When to tell the wait again (more than 0, at most {MAX_LATER_MINUTES}).")},
                    result={"id": Text(),
                            "until": Integer("When it will be told (ms since the epoch); null: the job waits "
                                             "for nothing.", nullable=True)},
                    codes=FINDS,
                    doc="Not now (roost web): the job's wait is told again, as a reminder, in `minutes`."),
})
def notify(call):
    if call.args["action"] == "focus":
        job_id = call.args["id"]
        if job_id is not None:
            job_id = call.services.jobs.resolve(job_id).id
        call.services.notifier.focus(call.session, job_id)
        return {"id": job_id}
    if call.args["action"] == "later":
        job = call.services.jobs.resolve(call.args["id"])
        minutes = call.args["minutes"]
        if not 0 < minutes <= MAX_LATER_MINUTES:
            raise bad_request(f"minutes must be more than 0 and at most {MAX_LATER_MINUTES}")
        return {"id": job.id, "until": call.services.notifier.later(job.row(), minutes * 60)}
    results = call.services.notifier.test()
    return {"sinks": [dict({"sink": name, "ok": ok}, **({"error": why} if why else {}))
                      for name, ok, why in results]}
