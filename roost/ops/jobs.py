"""The job ops (spec op reference): dispatch, list, resolve, stop, rm, respawn, pin,
rename, reorder and reply. Each reads its arguments and calls the job registry
(`call.services.jobs`), the runner or the reply desk; every answer comes after its
effect is on disk."""

from roost.clock import now_ms
from roost.contract import Choice, Flag, ListOf, Shape, Text
from roost.errors import (BAD_REQUEST, BUSY, CONFLICT, FULL, INTERNAL, NOT_FOUND, UNSUPPORTED, RoostError, bad_request,
                          not_found)
from roost.jobs import launch as launching
from roost.jobs.launch_args import DISPATCH_ARGS, REQUEST_ID
from roost.ops import op
from roost.ops.shapes import JOB_AND_NAME, JOB_ROW
from roost.rows import order_key

# `list` without `all`: live jobs, pinned ones, and those that ended in the last day.
RECENT_MS = 24 * 60 * 60 * 1000

JOB = Text("A job's id, unique id prefix or unique name.", min_length=1)
# Finding the job `id` names (the registry's resolve), stopping a job (the runner's
# stop) and starting one (its start and wake).
FINDS = (BAD_REQUEST, NOT_FOUND)
STOPS = (BUSY, CONFLICT)
STARTS = (BAD_REQUEST, BUSY, CONFLICT, INTERNAL)


def _job(call):
    return call.services.jobs.resolve(call.args["id"])


@op("dispatch", args=DISPATCH_ARGS, result=dict(JOB_AND_NAME, notice=Text(
    "issue 29: roost would hold its own start of this profile back now (a budget, a plan window, maxLive), "
    "and why; the person's start goes all the same.", optional=True)), codes=(UNSUPPORTED,) + STARTS)
def dispatch(call):
    # The callers' table lets only the person dispatch (never a job's process).
    # issue 29: the person's own start is never held back by a budget, a plan window or
    # maxLive; it is told instead (`notice`).
    verdict = call.services.admission.check(call.args)
    started = call.services.launcher.launch(call.args, call.args["requestId"], by_person=True)
    if verdict is not None:
        started = dict(started, notice=f"roost holds its own starts of this profile back now: {verdict.why}")
    return started


def _listed(job, now):
    if job.live or job.running or job.record.get("pinned"):
        return True
    ended_at = job.record.get("endedAt") or job.record.get("stateSince") or 0
    return now - ended_at < RECENT_MS


def _in_dir(job, directory):
    cwd = job.record.get("cwd") or ""
    return cwd == directory or cwd.startswith(directory.rstrip("/") + "/")


def sort_key(job):
    """roost.rows' order, of the job's record."""
    return order_key(job.record)


@op("list", args={"all": Flag("Every job on record, the concierge's too (its row says `role`).", default=False),
                  "cwd": Text("Only the jobs working in this directory or below it.", default=None)},
    result={"jobs": ListOf(JOB_ROW)})
def list_jobs(call):
    registry = call.services.jobs
    everything = call.args["all"]
    directory = call.args["cwd"]
    now = now_ms()
    # M44: the concierge's job is the hub's status line, not a session: only `all` lists it.
    jobs = [job for job in registry.all()
            if job.state is not None     # not until its start is recorded
            and (everything or (job.record.get("role") != "concierge" and _listed(job, now)))
            and (directory is None or _in_dir(job, directory))]
    jobs.sort(key=sort_key)
    return {"jobs": [call.services.with_parent_open(job.row()) for job in jobs]}


@op("resolve", quick=True, args={"query": JOB}, result={"id": Text()}, codes=FINDS)
def resolve(call):
    return {"id": call.services.jobs.resolve(call.args["query"]).id}


@op("stop", args={"id": JOB}, result={"id": Text()}, codes=FINDS + STOPS)
def stop(call):
    job = _job(call)
    call.services.runner.stop(job)
    return {"id": job.id}


@op("rm", args={"id": JOB}, result={"id": Text()}, codes=FINDS + STOPS)
def rm(call):
    services = call.services
    job = _job(call)
    services.runner.stop(job)   # live: stopped first; ended: anything left of it ends too
    if job.finisher is not None:
        job.finisher.join(timeout=10)
    services.jobs.remove(job)
    return {"id": job.id}


@op("respawn", args={
    "id": JOB.but(default=None, doc="Required unless `all`."),
    "all": Flag("Every job that ended without finishing (stopped, reaped or failed); with `restart` the live "
                "ones too.", default=False),
    "restart": Flag("Also a live one: stopped and started again (the crash-loop hold lifted).", default=False),
    "prompt": Text("A reply queued for each job started.", typed="prompt", default=None),
}, result={"results": ListOf(Shape({"id": Text(), "started": Flag(), "error": Text(optional=True)}))},
    codes=FINDS)
def respawn(call):
    """Start an ended job again (the profile's resume argv when it has one); `restart`
    also restarts a live one and lifts the crash-loop hold. `all`: every job that ended
    without finishing (stopped, reaped or failed), and with `restart` the live ones."""
    services = call.services
    registry, runner = services.jobs, services.runner
    restart = call.args["restart"]
    prompt = call.args["prompt"]
    if call.args["all"]:
        targets = [job for job in sorted(registry.all(), key=sort_key)
                   if (job.state in ("stopped", "failed") and not job.running) or (restart and job.running)]
    else:
        if call.args["id"] is None:
            raise bad_request("id is required unless all is true")
        targets = [_job(call)]
    results = []
    for job in targets:
        try:
            if job.running:
                if not restart:
                    results.append({"id": job.id, "started": False,
                                    "error": "it is running (restart starts it again)"})
                    continue
                runner.stop(job)
            runner.wake(job, restart=restart)
            if prompt and prompt.strip():
                services.replies.queue(job, prompt.strip())
            results.append({"id": job.id, "started": True})
        except RoostError as error:
            results.append({"id": job.id, "started": False, "error": error.text})
    return {"results": results}


@op("pin", args={"id": JOB, "pinned": Flag("AV-K7: listed first and never reaped.")},
    result={"id": Text(), "pinned": Flag()}, codes=FINDS + (CONFLICT,))
def pin(call):
    job = _job(call)
    pinned = call.args["pinned"]
    call.services.jobs.change(job, pinned=pinned)
    return {"id": job.id, "pinned": pinned}


@op("rename", args={"id": JOB, "name": Text("Spaces folded; cut at 200 characters.", min_length=1, trim=True)},
    result=JOB_AND_NAME, codes=FINDS + (CONFLICT,))
def rename(call):
    job = _job(call)
    name = launching.fold_name(call.args["name"])
    call.services.jobs.change(job, name=launching.check_name(name))
    return {"id": job.id, "name": job.name}


@op("reorder", args={"ids": ListOf(Text()), "key": Text("The section: a state group or `dir:<cwd>`.", min_length=1)},
    result={}, codes=(NOT_FOUND, CONFLICT))
def reorder(call):
    """AV-K13: these jobs, in this order, within the section `key`; the rest of that
    section keeps its place (the moved ones go where the first of them was)."""
    registry = call.services.jobs
    ids = call.args["ids"]
    key = call.args["key"]
    moved = []
    for job_id in ids:
        job = registry.get(job_id)
        if job is None:
            raise not_found(f"no job {job_id!r}")
        if job not in moved:
            moved.append(job)
    section = sorted((job for job in registry.all()
                      if job.record.get("orderKey") == key and job.record.get("order") is not None),
                     key=lambda job: job.record["order"])
    at = next((index for index, job in enumerate(section) if job in moved), len(section))
    rest = [job for job in section if job not in moved]
    at = min(at, len(rest))
    ordered = rest[:at] + moved + rest[at:]
    for position, job in enumerate(ordered):
        if job.record.get("order") != position or job.record.get("orderKey") != key:
            registry.change(job, order=position, orderKey=key)
    return {}


@op("reply", args={
    "id": JOB,
    "text": Text(min_length=1, trim=True, typed="reply text"),
    "mode": Choice(("steer", "followUp"), "M28: \"steer\" joins the work under way, after its current tool "
                   "calls; \"followUp\" waits until it is done.", default="followUp"),
    "requestId": REQUEST_ID,
}, result={
    "delivered": Flag("Handed to the live agent (typed, or sent to a protocol agent)."),
    "saved": Flag("Kept for its next start, or until the agent acks it."),
    "stopped": Flag("A `/stop`: the job was stopped instead.", optional=True),
    "respawned": Flag("An ended job was started again for it.", optional=True),
    "error": Text("Why it could not be started again.", optional=True),
    "duplicate": Flag("M36: a resend of a reply taken already.", optional=True),
}, codes=FINDS + (UNSUPPORTED, FULL) + STOPS + STARTS)
def reply(call):
    job = _job(call)
    args = call.args
    return call.services.replies.reply(job, args["text"], args["mode"], args["requestId"])
