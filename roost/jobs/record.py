"""A job as roost keeps it: its record (job.json), its row (the spec's JobRow), its run
(roost.jobs.run) and the states its row takes. Plain data and small functions; the
registry (roost.jobs.registry) is the only one that changes a record (`change`, and
`move` for a run).

job.json holds the row's fields at the top level, beside what the daemon needs to start
the job again (`launch`) and its bookkeeping (recent starts, the last exit). Its token,
and what roost decided about it that the job must not change, are kept apart, where no
job writes (roost.jobs.trusted).
Its replies and their request ids are in the job's reply book (roost.jobs.reply_book).
Fields this version does not know are kept: the record is the dict read from disk,
changed in place.
"""

import gevent.lock

from roost.clock import now_ms
from roost.jobs.reply_book import ReplyBook
from roost.jobs.run import Run

RECORD_VERSION = 1

# What an agent says while its program runs (its reports, or its screen read for it), as
# often as it likes; and how a run ends (roost.jobs.run). A stop always ends `stopped`.
AGENT_STATES = ("working", "blocked", "done", "failed")
END_STATES = ("done", "failed", "stopped")
LIVE_STATES = ("working", "blocked")


def end_state(stopping, exit_fields, said):
    """The row's state when a run ends: `stopped` when a stop was under way; `failed`
    when the program failed; else what the agent last said of its end, when it said
    `done` or `failed` (a reported failure stands though the program exited 0); else
    `done`. An exit nobody saw (the machine restarted) keeps the agent's own end or is
    `stopped`."""
    if stopping:
        return "stopped"
    if exit_fields is None:
        return said if said in ("done", "failed") else "stopped"
    if exit_fields.get("signal") or exit_fields.get("code") not in (0, None):
        return "failed"
    return "failed" if said == "failed" else "done"


# The JobRow fields every row carries (the spec: "Required: yes"), with their defaults.
_ROW_DEFAULTS = {
    "id": None, "cwd": "", "kind": "shell", "startedAt": 0, "state": "working", "pid": None,
    "status": None, "waitingFor": None, "sessionFile": "", "name": "", "endedAt": None,
    "summary": None, "question": None, "choices": (), "model": None, "thinking": None,
    "context": None, "error": None, "stateSince": 0, "reaped": False, "pinned": False,
    "order": None, "orderKey": None,
    # issue 19: when the usage limit a `waitingFor: "limit"` row waits at resets (ms), or null.
    "resetsAt": None,
    # issue 29: what the job spent, read from its agent's own records (roost.spend), or
    # null when roost cannot read it or it has spent nothing yet: never a made-up 0.
    "spend": None,
}
# Optional JobRow fields: shown when the record has them.
_ROW_OPTIONAL = ("usage", "parentSession", "rootSession", "parentOpen", "agent", "prs", "worktree",
                 "fanout", "profile", "schedule", "capabilities", "role", "suggested", "task",
                 "person", "sandboxed")
# roost's own optional fields, shown only while they hold a value: `unreadSince`, since
# when a terminal agent's screen has matched none of its profile's patterns, once that
# has lasted (roost.jobs.unread); `held`, while a person attached to a terminal agent has
# typed a line not yet submitted and roost types nothing there (roost.term.drafts);
# `budgetHold`, while a job that went over a budget is parked (issue 29, roost.spend.budgets):
# {budget, why, at}; its row is then `blocked`, `waitingFor: "budget"`.
_ROW_WHILE_SET = ("unreadSince", "held", "budgetHold")

ROW_FIELDS = frozenset(_ROW_DEFAULTS) | frozenset(_ROW_OPTIONAL) | frozenset(_ROW_WHILE_SET) | {"queued"}


def budget_held(job):
    """The job went over a budget and waits for the person (issue 29): roost types
    nothing into it, delivers nothing to it, and does not start it again for a reply."""
    return bool(job.record.get("budgetHold"))


class Job:
    """One job: its record (persisted), its run, and what only the running daemon has."""

    # Hundreds of jobs: slots keep each small.
    __slots__ = ("record", "token", "job_dir", "reply_book", "terminal", "run", "finisher", "removed",
                 "saved_generation", "changed_generation", "write_lock")

    def __init__(self, record, job_dir=None, token=None):
        self.record = record
        self.token = token            # proves a connection speaks for it (roost.jobs.trusted)
        self.job_dir = job_dir
        self.reply_book = None        # roost.jobs.reply_book.ReplyBook, read when first needed
        self.terminal = None          # roost.term.terminal.Terminal while the pty is ours
        self.run = Run(record.get("pid"))
        self.finisher = None          # the greenlet that ends the run once it exited (run_end)
        self.removed = False
        self.saved_generation = 0     # what is on disk (see JobRegistry.persist)
        self.changed_generation = 0
        self.write_lock = gevent.lock.Semaphore()

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
        """Its program runs (being stopped included). A protocol agent may report `done`
        and still run; a job being started does not run yet."""
        return self.run.phase in ("running", "stopping")

    @property
    def speaks(self):
        """Its program runs and is not being stopped: an agent may speak for it."""
        return self.run.phase == "running"

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
        for field in _ROW_WHILE_SET:
            if record.get(field) is not None:
                row[field] = record[field]
        row["queued"] = self.replies().queued if self.job_dir else 0
        hold = record.get("budgetHold")
        if hold and row["state"] in LIVE_STATES:
            # Parked since the hold began, whatever its agent does meanwhile (told once).
            row["state"], row["waitingFor"], row["stateSince"] = "blocked", "budget", hold.get("at") or row["stateSince"]
        return row


def new_record(job_id, fields):
    """The record of a job about to start for the first time."""
    now = now_ms()
    record = dict(_ROW_DEFAULTS)
    record["choices"] = []
    record.update({"version": RECORD_VERSION, "id": job_id, "state": None,
                   "startedAt": now, "stateSince": now, "createdAt": now,
                   "runs": {"quickDeaths": 0}})
    record.update(fields)
    return record
