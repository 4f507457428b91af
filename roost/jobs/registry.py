"""The jobs the daemon knows: `daemon.jobs`, a JobRegistry.

It loads every `$ROOST_HOME/jobs/<id>/job.json` at start, finds jobs (`get`, `resolve`),
and is the one place a job's record changes (`change`: check the transition, persist,
then tell `on_row_change`). Starting, stopping and adopting jobs is the runner's
(roost.job_runner); typing replies is roost.job_replies'; idle reaping roost.job_reaping's.

The daemon calls `daemon_started(daemon)` once its op table is loaded (it adopts every
job the keeper holds) and, through `daemon.stop_hooks`, `daemon_stopping(daemon,
keep_workers)`.
"""

import logging
import os
import secrets
import time

import gevent
import gevent.event
import gevent.lock

from roost import paths
from roost import store
from roost.errors import RoostError, bad_request, not_found
from roost.jobs.record import ROW_FIELDS, Job, TransitionRefused, check_transition, new_record, now_ms

log = logging.getLogger(__name__)

JOB_FILE = "job.json"


class JobRegistry:
    def __init__(self, daemon):
        self.daemon = daemon
        self.home = daemon.home
        self.jobs = {}                 # id -> Job
        self.by_request_id = {}        # M36: a dispatch's requestId -> the job it made
        self.dispatching = {}          # requestId -> AsyncResult while that dispatch runs
        self.on_row_change = []        # fn(row, previous row or None) after each durable change
        self.on_remove = []            # fn(row) after a job is removed
        self.on_reply_queued = []      # fn(job) after a reply went into its book (protocol delivery)
        from roost.jobs.runner import JobRunner

        self.runner = JobRunner(self, daemon)

    # -- finding --------------------------------------------------------------
    def load(self):
        directory = paths.jobs_dir(self.home)
        store.make_private_dir(directory)
        for name in sorted(os.listdir(directory)):
            path = os.path.join(directory, name, JOB_FILE)
            record = store.read_json(path)
            if record is None:
                if os.path.isdir(os.path.join(directory, name)):
                    log.warning("job directory %s has no readable job.json; left as it is", name)
                continue
            if record.get("id") != name or not record.get("token"):
                log.error("job.json in %s names another job or has no token; ignored", name)
                continue
            job = self._track(Job(record, os.path.join(directory, name)))
            if record.get("requestId"):
                self.by_request_id[record["requestId"]] = job.id
        log.info("%d jobs on record", len(self.jobs))

    def _track(self, job):
        job.write_lock = gevent.lock.Semaphore()
        job.ended = gevent.event.Event()
        job.waiting = gevent.event.Event()
        if not job.running:
            job.ended.set()
        self.jobs[job.id] = job
        return job

    def get(self, job_id):
        return self.jobs.get(job_id)

    def all(self):
        return list(self.jobs.values())

    def resolve(self, query):
        """A job by id, unique id prefix, or unique name; not_found, or bad_request when
        the query matches several."""
        if not isinstance(query, str) or not query.strip():
            raise bad_request("a job id or name is required")
        query = query.strip()
        job = self.jobs.get(query)
        if job is not None:
            return job
        by_prefix = [job for job in self.jobs.values() if job.id.startswith(query)]
        if len(by_prefix) == 1:
            return by_prefix[0]
        if len(by_prefix) > 1:
            raise bad_request(f"{query!r} is the start of {len(by_prefix)} job ids; give more of it")
        by_name = [job for job in self.jobs.values() if job.record.get("name") == query]
        if len(by_name) == 1:
            return by_name[0]
        if len(by_name) > 1:
            raise bad_request(f"{len(by_name)} jobs are named {query!r}; use an id")
        raise not_found(f"no job {query!r}")

    def job_dir(self, job_or_id):
        job_id = job_or_id if isinstance(job_or_id, str) else job_or_id.id
        return paths.job_dir(self.home, job_id)

    # -- changing -------------------------------------------------------------
    def create(self, fields, launch, request_id=None):
        """A new job: its directory, and its record in memory (state None) until its
        start writes it (JobRunner.start). A daemon that dies in between leaves the
        keeper a job no record claims, which the next daemon ends (JobRunner.adopt)."""
        job_id = self._new_id()
        directory = self.job_dir(job_id)
        os.mkdir(directory, 0o700)
        record = new_record(job_id, secrets.token_urlsafe(32), fields)
        record["launch"] = launch
        if request_id:
            record["requestId"] = request_id
        job = self._track(Job(record, directory))
        if request_id:
            self.by_request_id[request_id] = job.id
        return job

    def _new_id(self):
        while True:
            job_id = secrets.token_hex(4)
            if job_id not in self.jobs and not os.path.exists(self.job_dir(job_id)):
                return job_id

    def change(self, job, state=None, lasting=True, **fields):
        """The one mutator: check the state's transition, apply, persist, then emit.
        `lasting=False`: what changed is read off the screen again at any time (a working
        job's last line), so it is not worth a durable write of its own; the next
        lasting change writes it along."""
        if getattr(job, "removed", False):
            return job.row()
        before = job.row()
        if state is not None and state != job.state:
            try:
                check_transition(job.state, state)
            except TransitionRefused as refusal:
                log.error("job %s: %s", job.id, refusal)
                raise RoostError("conflict", f"job {job.id} is {job.state}: {refusal}")
            job.record["state"] = state
            job.record["stateSince"] = now_ms()
        job.record.update(fields)
        after = job.row()
        if after == before and state is None and not _hidden_change(fields):
            return after
        if lasting:
            self.persist(job)
        for hook in list(self.on_row_change):
            try:
                hook(after, before)
            except Exception:
                log.exception("a row-change hook failed")
        return after

    def notify(self, job, before):
        """Tell on_row_change of a change made elsewhere (the reply book's `queued`)."""
        after = job.row()
        if after == before:
            return
        for hook in list(self.on_row_change):
            try:
                hook(after, before)
            except Exception:
                log.exception("a row-change hook failed")

    def persist(self, job):
        """Write the record; returns once what it holds now is on disk. Writes of one job
        never overlap, and a writer that waited finds its change already written by the
        one before it when that one started later (coalescing)."""
        job.changed_generation += 1
        wanted = job.changed_generation
        with job.write_lock:
            if job.saved_generation >= wanted or getattr(job, "removed", False):
                return
            generation = job.changed_generation
            store.write_json(os.path.join(self.job_dir(job), JOB_FILE), job.record)
            job.saved_generation = generation

    def flush(self, timeout=5.0):
        """Wait until every change made so far is on disk (the daemon is leaving)."""
        deadline = time.monotonic() + timeout
        for job in list(self.jobs.values()):
            while job.saved_generation < job.changed_generation and not getattr(job, "removed", False):
                if time.monotonic() > deadline:
                    log.error("job %s: a change was not written before the daemon left", job.id)
                    break
                gevent.sleep(0.005)

    def remove(self, job):
        """Forget an ended job and remove its directory."""
        row = job.row()
        job.removed = True
        self.jobs.pop(job.id, None)
        request_id = job.record.get("requestId")
        if request_id and self.by_request_id.get(request_id) == job.id:
            del self.by_request_id[request_id]
        with job.write_lock:
            store.remove_tree(self.job_dir(job))
        for hook in list(self.on_remove):
            try:
                hook(row)
            except Exception:
                log.exception("a remove hook failed")

    # -- the runner's, for the other modules ----------------------------------
    def runs(self, job):
        """Its program runs and is not being stopped: an agent may speak for it."""
        return job.running and not job.stopping

    def wake(self, job):
        """Start a reaped or ended job again (the profile's resume argv when it has one);
        returns the job, live. RoostError when it may not start (backed off, failed)."""
        return self.runner.wake(job)

    def counts(self):
        live = sum(1 for job in self.jobs.values() if job.running)
        return {"live": live, "total": len(self.jobs)}


def _hidden_change(fields):
    # Fields outside the row (launch, runs, reply ids) still need writing.
    return any(field not in ROW_FIELDS for field in fields)


def daemon_started(daemon):
    """Called once by the daemon before it serves: load every job and adopt the live ones
    from the keeper (starting a keeper when none runs)."""
    registry = JobRegistry(daemon)
    daemon.jobs = registry
    registry.load()
    from roost.jobs import reaping as job_reaping

    job_reaping.install(registry)
    try:
        registry.runner.adopt()
    except Exception as error:
        log.exception("adopting the jobs failed")
        daemon.pty_error = f"cannot reach the keeper: {error}"
    job_reaping.arm_all(registry)
    daemon.stop_hooks.append(lambda keep_workers: daemon_stopping(daemon, keep_workers))


def daemon_stopping(daemon, keep_workers):
    """shutdown: with keepWorkers the keeper and every job go on for the next daemon;
    without, every job is stopped and the keeper leaves once they are gone."""
    registry = getattr(daemon, "jobs", None)
    if registry is None:
        return
    registry.runner.shut_down(keep_workers)
    registry.flush()
