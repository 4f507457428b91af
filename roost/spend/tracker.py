"""The daemon's part: every job's ledger kept current from its agent's records, and its
row's `spend` (issue 29 item 1).

One worker greenlet refreshes the jobs that asked, one at a time: it finds the job's
files (roost.spend.sources), reads each from where it was last read in the threadpool
(a big first read costs the loop nothing), and applies what was counted in the loop,
the one place a ledger changes. A job asks for a refresh when its files' directories
change (roost.spend.watcher), when a turn begins or ends, when its session id changes
and when its run ends. A protocol agent's `usage` report is counted as it comes.

Each ledger is kept in the job's directory (`spend.json`: its tallies, the response keys
it counted, each file's offset), written at most every SAVE_EVERY_S while it changes and
when the daemon stops; a daemon started again goes on from there, reading no file from
its start. A job removed leaves its tallies in `$ROOST_HOME/spend-archive.jsonl`, so a
task's and a day's totals keep it.

The row's `spend` is {tokens: {input, output, cacheRead, cacheWrite}, usd, models,
unpriced, source, at}, or null for a job roost cannot read or that has written nothing.
"""

import collections
import logging
import os
import socket

import gevent
import gevent.event

from roost import blocking, codec, paths, store
from roost.jobs import limits
from roost.spend import archive, small_agents, sources, tokens, usage
from roost.spend.follow import LineFollower
from roost.spend.readers import READERS, grown, read_batch, reader_of
from roost.spend.ledger import Ledger
from roost.spend.prices import Prices
from roost.spend.watcher import DirectoryWatcher

log = logging.getLogger(__name__)

STATE_FILE = "spend.json"
STATUS_FILE = "claude-status.json"      # written by `roost statusline` in the job's directory
ARCHIVE = "spend-archive.jsonl"
STATE_VERSION = 1
SAVE_EVERY_S = 30.0           # a daemon killed meanwhile reads the rest again, counting each response once
LOOK_EVERY_S = 30.0           # without news of a new file of its own, a job looks again this often (turns: at once)
INLINE_BYTES = 256 << 10      # grown by less: read in the loop, not the threadpool

class SpendTracker:
    def __init__(self, registry, config, home, windows, clock):
        self.registry = registry
        self.config = config
        self.home = home
        self.clock = clock            # roost.clock: a reading's time, when to look and save again
        self.windows = windows        # roost.spend.windows.Windows: what the records say of the plan
        self.host = socket.gethostname()
        self.watcher = DirectoryWatcher(self._changed)
        self.ledgers = {}             # job id -> Ledger
        self._followers = {}          # job id -> {path: LineFollower}
        self._kinds = {}              # job id -> its reader
        self._about = {}              # job id -> {"provider", "project"}: what it is grouped by
        self._queue = collections.OrderedDict()    # job ids to refresh, in order
        self._wake = gevent.event.Event()
        self._worker = None
        self._saved_at = {}           # job id -> when its ledger was last written (monotonic)
        self._save_timers = {}
        self._looked_at = {}          # job id -> when its files were last looked for (monotonic)
        self._job_dirs = set()        # the jobs' own directories watched (for the status line's file)
        self._prices = (None, None)
        self._archive = None          # the archive's entries, read once, kept as they are added
        self.on_spend = []            # fn(job, spend) after a row's spend changed (budgets)

    # -- life -------------------------------------------------------------------------

    def start(self):
        """After the jobs are loaded: each ledger from its file, each row's spend, and a
        first look at every job's records."""
        for job in self.registry.all():
            kind = reader_of(job)
            if kind is None:
                continue
            self._load(job, kind)
            self._set_row(job)
            self.ask(job.id)
        self.watcher.start()
        self._worker = gevent.spawn(self._work)

    def stop(self):
        if self._worker is not None:
            self._worker.kill(block=True)
        self.watcher.stop()
        for job_id in list(self.ledgers):
            job = self.registry.get(job_id)
            if job is not None and self.ledgers[job_id].changed:
                self._save(job)

    def prices(self):
        current = self.config.current()
        if self._prices[0] is not current:
            self._prices = (current, Prices(current))
        return self._prices[1]

    # -- hooks --------------------------------------------------------------------------

    def row_changed(self, after, before):
        job = self.registry.get(after["id"])
        if job is None:
            return
        kind = reader_of(job)
        if kind is None:
            return
        if job.id not in self.ledgers:
            self._load(job, kind)
        ledger = self.ledgers[job.id]
        session = job.launch.get("sessionId")
        if isinstance(session, str) and session not in ledger.sessions:
            ledger.sessions.append(session)
            ledger.changed = True
            self.ask(job.id)
        if kind == "report":
            if before is None or after.get("usage") != before.get("usage"):
                if small_agents.report_take(ledger, after.get("usage"), tokens.day_of_ms(self.clock.now_ms())):
                    self._counted(job)
            return
        if before is None or any(after.get(key) != before.get(key) for key in ("status", "state")):
            self.ask(job.id)

    def removed(self, row):
        """A job removed: its tallies go to the archive, so the totals keep them."""
        job_id = row["id"]
        ledger = self.ledgers.pop(job_id, None)
        self._followers.pop(job_id, None)
        self._kinds.pop(job_id, None)
        about = self._about.pop(job_id, {})
        self._queue.pop(job_id, None)
        self.watcher.forget(job_id)
        self._job_dirs.discard(paths.job_dir(self.home, job_id))
        if ledger is None or ledger.empty():
            return
        entry = dict(self.describe_row(row, ledger, about), removedAt=self.clock.now_ms())
        try:
            store.append_bytes(os.path.join(self.home, ARCHIVE), codec.encode(entry) + b"\n")
            if self._archive is not None:
                self._archive.append(entry)
        except OSError:
            log.exception("job %s: its spend could not be archived", job_id)

    # -- the worker ---------------------------------------------------------------------

    def ask(self, job_id, look=True):
        """Refresh the job soon; `look`: find its files anew too (a turn's end, a new
        session id), not only read those it follows (a directory's write)."""
        self._queue[job_id] = self._queue.get(job_id, False) or look
        self._wake.set()

    def _changed(self, changes):
        """The watcher's news: a followed file written asks its job(s) to read it; a new
        file in a job's directory asks them to look for theirs."""
        for directory, names in changes.items():
            owners = self.watcher.owners(directory)
            for name, created in names.items():
                if name != STATUS_FILE and directory in self._job_dirs:
                    continue          # roost's own writes in a job's directory (its log, job.json)
                path = os.path.join(directory, name)
                readers = [job_id for job_id in owners if path in self._followers.get(job_id, ())]
                for job_id in readers:
                    self.ask(job_id, look=False)
                if not (created or name == STATUS_FILE) or readers:
                    continue
                # A new file: whose it is, by the session id in its name; in a directory of
                # many jobs, the others look only when their turn to look is due.
                for job_id in owners:
                    sessions = self.ledgers[job_id].sessions if job_id in self.ledgers else ()
                    mine = len(owners) == 1 or any(session in name for session in sessions)
                    self.ask(job_id, look=mine)

    def _work(self):
        while True:
            self._wake.wait()
            self._wake.clear()
            while self._queue:
                job_id, look = self._queue.popitem(last=False)
                job = self.registry.get(job_id)
                if job is None or job.removed:
                    continue
                try:
                    self._refresh(job, look)
                except Exception:
                    log.exception("job %s: its spend could not be read", job_id)

    def _refresh(self, job, look=True):
        kind = self._kinds.get(job.id) or reader_of(job)
        if kind not in READERS:
            return
        ledger = self.ledgers.get(job.id) or self._load(job, kind)
        if kind == "claude-code" and self._read_status(job, ledger):
            look = True               # perhaps a session id it had not had
        followers = self._followers.setdefault(job.id, {})
        now = self.clock.monotonic()
        if look or now - self._looked_at.get(job.id, -LOOK_EVERY_S) >= LOOK_EVERY_S:
            self._looked_at[job.id] = now
            found = self._look(job, kind, ledger)
        else:
            found = ()                # a write in a followed directory: what it follows is read
        for path in found:
            if path not in followers:
                kept = (ledger.files.get(path) or {}).get("follow") or {}
                followers[path] = LineFollower(path, kept.get("offset") or 0, kept.get("inode"))
                ledger.files.setdefault(path, {"follow": {}, "state": {}})
        version = ledger.version
        for path, follower in list(followers.items()):
            file_state = ledger.files[path].setdefault("state", {})
            more = True
            while more:
                if grown(follower) < INLINE_BYTES:
                    # A live session's next lines: read here, cheaper than a trip to the pool.
                    batch, readings, more = read_batch(follower, kind, file_state)
                else:
                    batch, readings, more = blocking.call(read_batch, follower, kind, file_state)
                batch.apply(ledger)
                if follower.state() != ledger.files[path].get("follow"):
                    ledger.files[path]["follow"] = follower.state()
                    ledger.changed = True
                if readings:
                    self._tell_readings(job, kind, readings)
                if more:
                    gevent.sleep(0)
        if ledger.version != version:
            self._counted(job)
        elif ledger.changed:
            self._save_soon(job)

    def _read_status(self, job, ledger):
        """Claude Code's status-line input as roost's status-line command recorded it
        (`roost statusline`): the session id it is in now, and the plan's windows."""
        path = os.path.join(job.job_dir, STATUS_FILE)
        try:
            info = os.stat(path)
        except OSError:
            return False
        stamp = [info.st_mtime_ns, info.st_size]
        if ledger.files.get(STATUS_FILE) == stamp:
            return False
        ledger.files[STATUS_FILE] = stamp
        status = store.read_json(path)
        if not isinstance(status, dict):
            return False
        session = status.get("session_id")
        if isinstance(session, str) and sources.SESSION_ID.match(session) and session not in ledger.sessions:
            ledger.sessions.append(session)
        ledger.changed = True
        self._tell_readings(job, "claude-status", [status])
        return True

    def _look(self, job, kind, ledger):
        """The job's files found anew (its directories watched): a glob or two, in the
        threadpool (roost.blocking)."""
        found, directories = blocking.call(sources.files, kind, job.launch, job.job_dir, job.record.get("cwd") or "",
                                           list(ledger.sessions))
        if kind == "claude-code":
            directories = set(directories) | {job.job_dir}     # its status line's record
            self._job_dirs.add(job.job_dir)
        for directory in directories:
            self.watcher.watch(directory, job.id)
        return found

    def _tell_readings(self, job, kind, readings):
        provider = (self._about.get(job.id) or {}).get("provider") or limits.provider_of(job)
        self.windows.heard(provider, kind, readings, job.id)
        if kind == "claude-code":
            # A rejection at the plan's limit: when it resets, for the row's resetsAt.
            full = self.windows.full(provider, 100)
            if full is not None and (job.record.get("limitFromRecords") or {}).get("resetsAt") != full[1]:
                fields = {"limitFromRecords": {"resetsAt": full[1], "window": full[0]}}
                if job.record.get("waitingFor") == "limit" and job.record.get("resetsAt") is None:
                    fields["resetsAt"] = full[1]
                self.registry.change(job, **fields)

    def _counted(self, job):
        spend = self._set_row(job)
        self._save_soon(job)
        for hook in list(self.on_spend):
            try:
                hook(job, spend)
            except Exception:
                log.exception("job %s: a spend hook failed", job.id)

    # -- the row and the file --------------------------------------------------------------

    def spend_of(self, ledger, kind):
        if ledger is None or ledger.empty():
            return None
        whole, by_model = ledger.totals()
        usd, unpriced = self.prices().usd(by_model)
        return {"tokens": tokens.as_dict(whole), "usd": usd,
                "models": sorted(model for model, count in by_model.items() if any(count)),
                "unpriced": unpriced, "source": kind, "at": self.clock.now_ms()}

    def _set_row(self, job):
        spend = self.spend_of(self.ledgers.get(job.id), self._kinds.get(job.id))
        current = job.record.get("spend")
        if spend is None and current is None:
            return None
        if current is not None and spend is not None and \
                {key: value for key, value in current.items() if key != "at"} == \
                {key: value for key, value in spend.items() if key != "at"}:
            return current
        self.registry.change(job, spend=spend, lasting=False)
        return spend

    def _load(self, job, kind):
        self._kinds[job.id] = kind
        # The board task it worked for: a start's `taskId`, a verify's or setup's `boardCheck`.
        task = job.record.get("taskId") or (job.record.get("boardCheck") or {}).get("task")
        self._about[job.id] = {"provider": limits.provider_of(job), "task": task if isinstance(task, int) else None,
                               "project": sources.project_of(job.record.get("cwd") or "")}
        value = store.read_json(os.path.join(job.job_dir, STATE_FILE)) if job.job_dir else None
        ledger = Ledger.from_state(value.get("ledger") if isinstance(value, dict) else None)
        session = job.launch.get("sessionId")
        if isinstance(session, str) and session not in ledger.sessions:
            ledger.sessions.append(session)
        self.ledgers[job.id] = ledger
        return ledger

    def _save_soon(self, job):
        if job.id in self._save_timers:
            return
        since = self.clock.monotonic() - self._saved_at.get(job.id, float("-inf"))
        delay = max(0.0, SAVE_EVERY_S - since)
        self._save_timers[job.id] = self.clock.call_later(delay, self._save_later, job)

    def _save_later(self, job):
        self._save_timers.pop(job.id, None)
        if not job.removed and job.id in self.ledgers:
            self._save(job)

    def _save(self, job):
        ledger = self.ledgers[job.id]
        ledger.changed = False
        self._saved_at[job.id] = self.clock.monotonic()
        try:
            store.write_json(os.path.join(job.job_dir, STATE_FILE),
                             {"version": STATE_VERSION, "kind": self._kinds.get(job.id), "ledger": ledger.state()})
        except OSError:
            log.exception("job %s: its spend could not be written", job.id)
        if job.record.get("spend") is not None:
            self.registry.persist(job)      # the row's figure on disk too (set with lasting=False)

    # -- what `usage` groups -------------------------------------------------------------

    def describe_row(self, record, ledger, about):
        task = about.get("task")
        return {"id": record["id"], "name": record.get("name"), "task": None if task is None else str(task),
                "project": about.get("project"), "provider": about.get("provider"),
                "source": self._kinds.get(record["id"]), "tally": ledger.tally, "host": self.host}

    def entries(self):
        """Every job's tallies with what it is grouped by: the live ledgers, then the
        archive's."""
        found = []
        for job_id, ledger in self.ledgers.items():
            job = self.registry.get(job_id)
            if job is None or ledger.empty():
                continue
            found.append(self.describe_row(job.record, ledger, self._about.get(job_id) or {}))
        found += self._archived()
        return found

    def totals(self, day=None, provider=None, task=None, job_id=None):
        """{model: count} spent that matches (roost.spend.usage.totals)."""
        return usage.totals(self.entries(), day, provider, task, job_id)

    def task_of(self, job_id):
        return (self._about.get(job_id) or {}).get("task")

    def provider_of(self, job_id):
        return (self._about.get(job_id) or {}).get("provider")

    def _archived(self):
        if self._archive is None:
            self._archive = archive.read_archive(os.path.join(self.home, ARCHIVE))
        return self._archive
