"""The jobs the daemon knows: a JobRegistry.

It loads every `$ROOST_HOME/jobs/<id>/job.json` at start, finds jobs (`get`, `resolve`),
and is the one place a job's record changes: `change` (the row's fields, checked,
persisted, then told to `on_row_change`) and `move` (a job's run, roost.jobs.run).
Starting, stopping and adopting jobs is the runner's (roost.jobs.runner).
"""

import logging
import os
import secrets
import time

import gevent

from roost import paths, store
from roost.errors import CONFLICT, RoostError, bad_request, not_found
from roost.jobs import reply_book
from roost.jobs.news import state_news
from roost.jobs.record import AGENT_STATES, END_STATES, ROW_FIELDS, Job, new_record
from roost.jobs.run import RunRefused
from roost.jobs.trusted import Trusted

log = logging.getLogger(__name__)

JOB_FILE = "job.json"
SHOWN_AMBIGUOUS = 5     # a name several jobs share: this many are named in the refusal


class JobRegistry:
    def __init__(self, home, bus, clock):
        self.home = home
        self.clock = clock             # roost.clock: when a row's state began (stateSince)
        self.bus = bus                 # roost.events.bus.EventBus: state changes that matter
        self.jobs = {}                 # id -> Job
        self.by_request_id = {}        # M36: a dispatch's requestId -> the job it made
        self.dispatching = {}          # requestId -> AsyncResult while that dispatch runs
        self.on_row_change = []        # fn(row, previous row or None) after each durable change
        self.on_remove = []            # fn(row) after a job is removed
        self.runs_moved = 0            # counts every run's move: a pid -> job index checks it
        self.trusted = Trusted(home)   # tokens, and what a job must not change (roost.jobs.trusted)

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
            if record.get("id") != name:
                log.error("job.json in %s names another job; ignored", name)
                continue
            token, changed = self.trusted.load(record)
            if token is None:
                log.error("job %s has no token (neither in roost's own record nor in job.json); ignored", name)
                continue
            if record.get("state") is not None and "sandboxed" not in record:
                record["sandboxed"] = False     # started by a roost before jails: it runs as it was
                changed = True
            job = Job(record, os.path.join(directory, name), token)
            self.jobs[job.id] = job
            if changed:
                self.persist(job)
            if record.get("requestId"):
                self.by_request_id[record["requestId"]] = job.id
        log.info("%d jobs on record", len(self.jobs))

    def get(self, job_id):
        return self.jobs.get(job_id)

    def all(self):
        return list(self.jobs.values())

    def resolve(self, query):
        """A job by id, unique id prefix, or unique name; not_found, or bad_request that
        lists the jobs when the query could mean several."""
        if not isinstance(query, str) or not query.strip():
            raise bad_request("a job id or name is required")
        query = query.strip()
        job = self.jobs.get(query)
        if job is not None:
            return job
        by_prefix = [job for job in self.jobs.values() if job.id.startswith(query)]
        if len(by_prefix) == 1:
            return by_prefix[0]
        if by_prefix:
            raise bad_request(f"{query!r} is the start of {len(by_prefix)} job ids: "
                              f"{_listing(by_prefix)}; give more of it")
        by_name = [job for job in self.jobs.values() if job.record.get("name") == query]
        if len(by_name) == 1:
            return by_name[0]
        if by_name:
            raise bad_request(f"{len(by_name)} jobs are named {query!r}: {_listing(by_name)}; use an id")
        raise not_found(f"no job {query!r}")

    def job_dir(self, job_or_id):
        job_id = job_or_id if isinstance(job_or_id, str) else job_or_id.id
        return paths.job_dir(self.home, job_id)

    def counts(self):
        live = sum(1 for job in self.jobs.values() if job.running)
        return {"live": live, "total": len(self.jobs)}

    # -- changing -------------------------------------------------------------
    def create(self, fields, launch, request_id=None):
        """A new job: its directory, and its record in memory (state None) until its
        start writes it (JobRunner.start). A daemon that dies in between leaves the
        keeper a job no record claims, which the next daemon ends (adoption)."""
        job_id = self._new_id()
        directory = self.job_dir(job_id)
        os.mkdir(directory, 0o700)
        reply_book.prepare(directory)
        token = secrets.token_urlsafe(32)
        self.trusted.write(job_id, token, launch, fields)
        record = new_record(job_id, fields)
        record["launch"] = launch
        if request_id:
            record["requestId"] = request_id
        job = Job(record, directory, token)
        self.jobs[job.id] = job
        if request_id:
            self.by_request_id[request_id] = job.id
        return job

    def _new_id(self):
        while True:
            job_id = secrets.token_hex(4)
            if job_id not in self.jobs and not os.path.exists(self.job_dir(job_id)):
                return job_id

    def change(self, job, state=None, lasting=True, **fields):
        """The one mutator of a row: check the state, apply, persist, then emit. While
        a run is in progress the row's state is what the agent says (any of its states);
        once it ended, how it ended. `lasting=False`: what changed is read off the
        screen again at any time (a working job's last line), so it is not worth a
        durable write of its own; the next lasting change writes it along."""
        if job.removed:
            return job.row()
        before = job.row()
        if state is not None and state != job.state:
            allowed = AGENT_STATES if job.run.active else END_STATES
            if state not in allowed:
                log.error("job %s: a row cannot be %s while its run is %s", job.id, state, job.run.phase)
                raise RoostError(CONFLICT, f"job {job.id} is {job.run.phase}: its row cannot be {state}")
            job.record["state"] = state
            job.record["stateSince"] = self.clock.now_ms()
        job.record.update(fields)
        if job.record.get("suggested") and job.record.get("status") != "waiting":
            job.record["suggested"] = None     # M45: a suggestion lasts while its row waits
        after = job.row()
        if after == before and state is None and not _hidden_change(fields):
            return after
        # The feed hears of it before the record is written: whatever happens during the
        # write (a reply typed on the row just seen) comes after it in the feed too.
        news = state_news(before, after)
        if news is not None:
            self.bus.publish("state", news, job.id, job.name, state=after["state"], status=after["status"],
                             waitingFor=after["waitingFor"], ended=not job.run.active)
        if lasting:
            self.persist(job)
        self._emit(after, before)
        return after

    def move(self, job, phase, reaping=False, **fields):
        """The one mutator of a run (roost.jobs.run): check the move, enter the phase,
        then change the row's fields with it (persisted, then told). Whoever waits for
        the run's end (`run.ended`) hears of it once the end is on disk."""
        try:
            job.run.enter(phase, reaping)
        except RunRefused as refusal:
            log.error("job %s: %s", job.id, refusal)
            raise RoostError(CONFLICT, f"job {job.id}: {refusal}")
        self.runs_moved += 1
        try:
            return self.change(job, **fields) if fields else job.row()
        finally:
            if phase == "ended":
                job.run.ended.set()

    def notify(self, job, before):
        """Tell on_row_change of a change made elsewhere (the reply book's `queued`)."""
        after = job.row()
        if after != before:
            self._emit(after, before)

    def _emit(self, after, before):
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
            if job.saved_generation >= wanted or job.removed:
                return
            generation = job.changed_generation
            store.write_json(os.path.join(self.job_dir(job), JOB_FILE), job.record)
            job.saved_generation = generation

    def flush(self, timeout=5.0):
        """Wait until every change made so far is on disk (the daemon is leaving)."""
        deadline = time.monotonic() + timeout
        for job in list(self.jobs.values()):
            while job.saved_generation < job.changed_generation and not job.removed:
                if time.monotonic() > deadline:
                    log.error("job %s: a change was not written before the daemon left", job.id)
                    break
                gevent.sleep(0.005)

    def remove(self, job, news=True):
        """Forget an ended job and remove its directory (`news`: tell the feed)."""
        row = job.row()
        job.removed = True
        self.jobs.pop(job.id, None)
        request_id = job.record.get("requestId")
        if request_id and self.by_request_id.get(request_id) == job.id:
            del self.by_request_id[request_id]
        with job.write_lock:
            store.remove_tree(self.job_dir(job))
            self.trusted.remove(job.id)
        if news:
            self.bus.publish("remove", "removed", job.id, job.name)
        for hook in list(self.on_remove):
            try:
                hook(row)
            except Exception:
                log.exception("a remove hook failed")


def _hidden_change(fields):
    # Fields outside the row (launch, runs, reply ids) still need writing.
    return any(field not in ROW_FIELDS for field in fields)


def _listing(jobs):
    """Jobs as a person tells them apart: id, state and when each started."""
    shown = []
    for job in sorted(jobs, key=lambda job: job.record.get("startedAt") or 0)[:SHOWN_AMBIGUOUS]:
        started = time.strftime("%H:%M", time.localtime((job.record.get("startedAt") or 0) / 1000))
        shown.append(f"{job.id} ({job.state or 'starting'}, started {started})")
    more = len(jobs) - len(shown)
    return ", ".join(shown) + (f" and {more} more" if more > 0 else "")
