"""`notify` (roost's own, issue 18):

    {action: "test"} -> {sinks: [{sink, ok, error?}]}: one notification to each sink
        roost.json names (roost.notify), answered once each has sent it or failed;
    {action: "focus", id: ID | null} -> {id}: the job this connection's person looks at
        (a hub's selection while its terminal has the focus; null: none), to which no
        desktop notification goes; forgotten when the connection ends."""

from roost.contract import Flag, ListOf, Shape, Text
from roost.ops import Action, op
from roost.ops.jobs import FINDS, JOB

SINK_RESULT = Shape({"sink": Text("The sink's name in roost.json."), "ok": Flag(),
                     "error": Text("Why it failed.", optional=True)})


@op("notify", by="action", actions={
    "test": Action(result={"sinks": ListOf(SINK_RESULT)},
                   doc="One notification to each sink roost.json names, answered once each has sent it or failed."),
    "focus": Action({"id": JOB.but(default=None, doc="The job the person looks at; null: none.")},
                    result={"id": Text(nullable=True)}, codes=FINDS,
                    doc="The job this connection's person looks at: no desktop notification goes for it."),
})
def notify(call):
    if call.args["action"] == "focus":
        job_id = call.args["id"]
        if job_id is not None:
            job_id = call.services.jobs.resolve(job_id).id
        call.services.notifier.focus(call.session, job_id)
        return {"id": job_id}
    results = call.services.notifier.test()
    return {"sinks": [dict({"sink": name, "ok": ok}, **({"error": why} if why else {}))
                      for name, ok, why in results]}
