"""`notify` (roost's own, issue 18):

    {action: "test"} -> {sinks: [{sink, ok, error?}]}: one notification to each sink
        roost.json names (roost.notify), answered once each has sent it or failed;
    {action: "focus", id: ID | null} -> {id}: the job this connection's person looks at
        (a hub's selection while its terminal has the focus; null: none), to which no
        desktop notification goes; forgotten when the connection ends;
    {action: "later", id, minutes} -> {id, until}: "Not now" (issue 30): the job's wait is
        told again, as a reminder, in `minutes` (more than 0, at most 1440); `until` (ms since the epoch)
        is null when the job waits for nothing."""

from roost.errors import bad_request
from roost.ops import args as read
from roost.ops import op

MAX_LATER_MINUTES = 24 * 60


@op("notify")
def notify(call):
    action = call.args.get("action")
    if action == "focus":
        job_id = call.args.get("id")
        if job_id is not None:
            job_id = call.services.jobs.resolve(read.text(call.args, "id", min_length=1)).id
        call.services.notifier.focus(call.session, job_id)
        return {"id": job_id}
    if action == "later":
        job = call.services.jobs.resolve(read.text(call.args, "id", min_length=1))
        minutes = read.number(call.args, "minutes")
        if not 0 < minutes <= MAX_LATER_MINUTES:
            raise bad_request(f"minutes must be more than 0 and at most {MAX_LATER_MINUTES}")
        return {"id": job.id, "until": call.services.notifier.later(job.row(), minutes * 60)}
    if action != "test":
        raise bad_request('action must be "test", "focus" or "later"')
    results = call.services.notifier.test()
    return {"sinks": [dict({"sink": name, "ok": ok}, **({"error": why} if why else {}))
                      for name, ok, why in results]}
