"""A job as roost keeps it: its record (job.json), its row (the spec's JobRow) and the
states it may move between. Plain data and small functions; the registry (roost.jobs)
is the only one that changes a record, through `JobRegistry.change`.

job.json holds the row's fields at the top level, beside what the daemon needs to start
the job again (`launch`), its token, and its bookkeeping (recent starts, the last exit).
Its replies and their request ids are in the job's reply book (roost.replies). Fields this version does not know are kept: the record is the dict
read from disk, changed in place.
"""

import time

RECORD_VERSION = 1

LIVE_STATES = ("working", "blocked")
ENDED_STATES = ("done", "failed", "stopped")

# States as data (STYLE 5): from a state to the ones it may change to. A job starts
# `working`; it ends done, failed or stopped; an ended job only starts again. Staying
# in a state (other fields changing) is always allowed.
TRANSITIONS = {
    None: {"working", "failed", "stopped"},
    "working": {"blocked", "done", "failed", "stopped"},
    "blocked": {"working", "done", "failed", "stopped"},
    "done": {"working", "failed"},     # an agent's own reports may move between its ends
    "failed": {"working", "done"},
    "stopped": {"working", "failed"},
}

# The JobRow fields every row carries (the spec: "Required: yes"), with their defaults.
_ROW_DEFAULTS = {
    "id": None, "cwd": "", "kind": "shell", "startedAt": 0, "state": "working", "pid": None,
    "status": None, "waitingFor": None, "sessionFile": "", "name": "", "endedAt": None,
    "summary": None, "question": None, "choices": (), "model": None, "thinking": None,
    "context": None, "error": None, "stateSince": 0, "reaped": False, "pinned": False,
    "order": None, "orderKey": None,
}
# Optional JobRow fields: shown when the record has them.
_ROW_OPTIONAL = ("usage", "parentSession", "rootSession", "parentOpen", "agent", "prs", "worktree",
                 "fanout", "profile", "schedule", "capabilities", "role", "suggested", "task")

ROW_FIELDS = frozenset(_ROW_DEFAULTS) | frozenset(_ROW_OPTIONAL) | {"queued"}


class TransitionRefused(Exception):
    pass


def now_ms():
    return int(time.time() * 1000)


def check_transition(old, new):
    if old == new:
        return
    if new not in TRANSITIONS.get(old, ()):
        raise TransitionRefused(f"a job cannot go from {old} to {new}")


class Job:
    """One job: its record (persisted), and what only the running daemon has."""

    def __init__(self, record, job_dir=None):
        self.record = record
        self.job_dir = job_dir
        self.reply_book = None        # roost.replies.ReplyBook, read when first needed
        self.terminal = None          # roost.terminal.Terminal while the pty is ours
        self.exit = None              # the keeper's exit fields once the program ended
        self.stopping = False         # a stop is under way: its end is `stopped`
        self.reaping = False          # ... and the stop is for idleness (DM-4)
        self.starting = False         # a start is under way
        self.early_exit = None        # an exit told while the start was being recorded
        self.ended = None             # gevent Event: set while no run of it is in progress
        self.waiting = None           # gevent Event: set while the screen says it waits
        self.reply_worker = None      # the greenlet typing queued replies
        self.reap_timer = None        # DM-4: the idle timer, armed while it waits
        self.finisher = None          # the greenlet that ends it after the exit
        self.run_pid = record.get("pid")   # the pid of the run the terminal belongs to
        self.saved_generation = 0     # what is on disk (see JobRegistry.persist)
        self.changed_generation = 0
        self.write_lock = None

    # -- reading --------------------------------------------------------------
    @property
    def id(self):
        return self.record["id"]

    @property
    def name(self):
        return self.record.get("name") or self.id

    @property
    def state(self):
        return self.record.get("state")

    @property
    def live(self):
        """Its row says it is at work or waits (JobRow.state)."""
        return self.state in LIVE_STATES

    @property
    def running(self):
        """Its program runs: from its start until its end was recorded. A protocol agent
        may report `done` and still run; a job being started does not run yet."""
        return self.record.get("pid") is not None

    @property
    def token(self):
        return self.record["token"]

    @property
    def launch(self):
        return self.record.setdefault("launch", {})

    @property
    def protocol(self):
        """A profile's agent that speaks the roost agent protocol (M31)."""
        return bool(self.launch.get("protocol"))

    def replies(self):
        """The job's reply book (replies.json): one per job, shared by every module."""
        if self.reply_book is None:
            from roost.jobs.reply_book import ReplyBook

            self.reply_book = ReplyBook(self.job_dir)
        return self.reply_book

    def row(self):
        """The spec's JobRow, as a new dict."""
        record = self.record
        row = {}
        for field, default in _ROW_DEFAULTS.items():
            value = record.get(field, default)
            row[field] = list(value) if isinstance(value, tuple) else value
        for field in _ROW_OPTIONAL:
            if field in record:
                row[field] = record[field]
        row["queued"] = self.replies().queued if self.job_dir else 0
        return row


def new_record(job_id, token, fields):
    """The record of a job about to start for the first time."""
    now = now_ms()
    record = dict(_ROW_DEFAULTS)
    record["choices"] = []
    record.update({"version": RECORD_VERSION, "id": job_id, "token": token, "state": None,
                   "startedAt": now, "stateSince": now, "createdAt": now,
                   "runs": {"quickDeaths": 0}})
    record.update(fields)
    return record
