"""The job ops (spec op reference): dispatch, list, resolve, stop, rm, respawn, pin,
rename, reorder and reply. Each reads its arguments and calls the job registry
(`call.services.jobs`), the runner or the reply desk; every answer comes after its
effect is on disk."""

from roost.errors import RoostError, bad_request, not_found
from roost.jobs import launch as launching
from roost.jobs.record import now_ms
from roost.ops import args as read
from roost.ops import op

# `list` without `all`: live jobs, pinned ones, and those that ended in the last day.
RECENT_MS = 24 * 60 * 60 * 1000


def _job(call, name="id"):
    return call.services.jobs.resolve(read.text(call.args, name, min_length=1))


@op("dispatch")
def dispatch(call):
    # The callers' table lets only the person dispatch (never a job's process).
    # issue 29: the person's own start is never held back by a budget, a plan window or
    # maxLive; it is told instead (`notice`).
    verdict = call.services.admission.check(call.args)
    started = call.services.launcher.launch(call.args, launching.request_id(call.args), by_person=True)
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
    """Pinned first (AV-K7), then the user's order (AV-K13), then oldest first."""
    record = job.record
    order = record.get("order")
    return (not record.get("pinned"), order is None, order or 0, record.get("createdAt") or record.get("startedAt") or 0)


@op("list")
def list_jobs(call):
    registry = call.services.jobs
    everything = read.flag(call.args, "all")
    directory = read.text(call.args, "cwd", default=None)
    now = now_ms()
    jobs = [job for job in registry.all()
            if job.state is not None     # not until its start is recorded
            and job.record.get("role") != "concierge"     # M44: the hub shows its status line instead
            and (everything or _listed(job, now)) and (directory is None or _in_dir(job, directory))]
    jobs.sort(key=sort_key)
    return {"jobs": [call.services.with_parent_open(job.row()) for job in jobs]}


@op("resolve", quick=True)
def resolve(call):
    query = read.text(call.args, "query", min_length=1)
    return {"id": call.services.jobs.resolve(query).id}


@op("stop")
def stop(call):
    job = _job(call)
    call.services.runner.stop(job)
    return {"id": job.id}


@op("rm")
def rm(call):
    services = call.services
    job = _job(call)
    services.runner.stop(job)   # live: stopped first; ended: anything left of it ends too
    if job.finisher is not None:
        job.finisher.join(timeout=10)
    services.jobs.remove(job)
    return {"id": job.id}


@op("respawn")
def respawn(call):
    """Start an ended job again (the profile's resume argv when it has one); `restart`
    also restarts a live one and lifts the crash-loop hold. `all`: every job that ended
    without finishing (stopped, reaped or failed), and with `restart` the live ones."""
    services = call.services
    registry, runner = services.jobs, services.runner
    restart = read.flag(call.args, "restart")
    prompt = read.text(call.args, "prompt", default=None, typed="prompt")
    if read.flag(call.args, "all"):
        targets = [job for job in sorted(registry.all(), key=sort_key)
                   if (job.state in ("stopped", "failed") and not job.running) or (restart and job.running)]
    else:
        if not call.args.get("id"):
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


@op("pin")
def pin(call):
    job = _job(call)
    pinned = read.flag(call.args, "pinned", default=None)
    if pinned is None:
        raise bad_request("pinned is required")
    call.services.jobs.change(job, pinned=pinned)
    return {"id": job.id, "pinned": pinned}


@op("rename")
def rename(call):
    job = _job(call)
    name = launching.fold_name(read.text(call.args, "name", min_length=1, trim=True))
    call.services.jobs.change(job, name=launching.check_name(name))
    return {"id": job.id, "name": job.name}


@op("reorder")
def reorder(call):
    """AV-K13: these jobs, in this order, within the section `key`; the rest of that
    section keeps its place (the moved ones go where the first of them was)."""
    registry = call.services.jobs
    ids = read.strings(call.args, "ids")
    key = read.text(call.args, "key", min_length=1)
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


@op("reply")
def reply(call):
    job = _job(call)
    text = read.text(call.args, "text", min_length=1, trim=True, typed="reply text")
    mode = read.choice(call.args, "mode", ("steer", "followUp"), default="followUp")
    request_id = launching.request_id(call.args)
    return call.services.replies.reply(job, text, mode, request_id)
