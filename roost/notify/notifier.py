"""Notifications: one per transition of a job into "needs you" (a question, a dialog, a
failure, a finished task in review), never again for the same wait, with the job's
name, what it waits for and the question's first line, masked (roost.notify.masking).

A wait is (what it needs, when its state began: `stateSince`): a row that changes
while it waits (its summary, its age) is the same wait; a job that worked and asks
again is a new one. A wait is told once it has held SETTLE_S, so a screen judged
waiting in a pause between two prints calls no one. Routing by attention: nothing goes
to the desktop for a job a person is attached to, or has selected in a hub whose
terminal has the focus (`notify {action: "focus"}`). A question still unanswered after
`reminderMinutes` (default 15; 0 or null: never) is told once more, marked as a
reminder; so is one a person put off ("Not now" on a page of `roost web`:
`notify {action: "later"}`), when the time they chose has passed.

roost.json:

    "notify": {"question": true, "dialog": true, "limit": true, "failure": true, "review": true,
               "reminderMinutes": 15, "desktop": true, "terminal": true,
               "command": ["ntfy", "publish", "--title", "roost", "mytopic"]}
"""

import logging
from urllib.parse import quote

import gevent

from roost.jobs import limits
from roost.notify import sinks
from roost.notify.masking import mask

log = logging.getLogger(__name__)

KINDS = ("question", "dialog", "limit", "failure", "review", "budget")
REMINDER_MINUTES = 15
SETTLE_S = 1.0       # how long a wait holds before it is told
FIRST_LINE = 300
SAYS = {"question": "asks", "dialog": "waits at a dialog", "limit": "stopped at its usage limit", "failure": "failed",
        "budget": "is parked at its budget",
        "review": "is ready for review"}


def need(row):
    """What a row needs of a person, or None. A wait is a row whose status says so
    (issue 27): a blocked row that roost cannot read (status null) is no question, and
    no one is called for it."""
    if row is None:
        return None
    if row.get("status") == "waiting":
        # A usage limit is not a question: nothing to answer, roost may resume it itself.
        if row.get("waitingFor") in ("dialog", "limit", "budget"):
            return row["waitingFor"]
        return "question"
    if row.get("state") == "failed":
        return "failure"
    return None


def first_line(text):
    for line in str(text or "").splitlines():
        if line.strip():
            return line.strip()[:FIRST_LINE]
    return ""


class Settings:
    def __init__(self, value):
        value = value if isinstance(value, dict) else {}
        self.kinds = {kind: value.get(kind, True) is not False for kind in KINDS}
        minutes = value.get("reminderMinutes", REMINDER_MINUTES)
        self.reminder_s = minutes * 60 if isinstance(minutes, (int, float)) and minutes > 0 else None
        self.desktop = value.get("desktop", True) is not False
        self.terminal = value.get("terminal", True) is not False
        command = value.get("command")
        self.command = command if isinstance(command, list) and command and all(
            isinstance(part, str) for part in command) else None


class Notifier:
    def __init__(self, config, push, attached, board_task, clock):
        """`push(message)` to the subscribed hubs; `attached(job_id)`: a person is in
        that job's terminal; `board_task(task_id)`: the board's task, or None; `clock`
        (roost.clock): when a wait has settled and when a reminder is due."""
        self._config = config
        self._clock = clock
        self._push = push
        self._attached = attached
        self._board_task = board_task
        self._waits = {}          # job id -> the wait last told
        self._latest = {}         # job id -> its row while it waits
        self._timers = {}         # job id -> the greenlet that tells of its wait, or reminds of it
        self._reviews = set()     # (task id, stageAt) told
        self._looked_at = {}      # a hub's session -> the job selected in it while focused

    def focus(self, session, job_id):
        """What a person looks at in a focused hub (None: nothing); no desktop
        notification goes to it."""
        if session not in self._looked_at:
            session.on_close(lambda closed: self._looked_at.pop(closed, None))
        self._looked_at[session] = job_id

    def looked_at(self, job_id):
        return self._attached(job_id) or job_id in self._looked_at.values()

    def settings(self):
        return Settings(self._config.get("notify"))

    # -- what happens -----------------------------------------------------------------

    def seed(self, row):
        """A wait on record when the daemon starts was told by the daemon before."""
        kind = need(row)
        if kind is not None:
            self._waits[row["id"]] = (kind, row.get("stateSince"))

    def row_changed(self, row, before):
        job_id = row["id"]
        kind = need(row)
        if kind is None:
            self._waits.pop(job_id, None)
            self._latest.pop(job_id, None)
            self._cancel(job_id)
            return
        self._latest[job_id] = row
        wait = (kind, row.get("stateSince"))
        if self._waits.get(job_id) == wait:
            return
        self._waits[job_id] = wait
        self._cancel(job_id)
        # Told once the wait has held a moment: a screen judged waiting between two
        # prints (a pause in the output) is no wait to call anyone for.
        self._timers[job_id] = self._clock.call_later(SETTLE_S, self._tell, job_id, wait)

    def _tell(self, job_id, wait):
        self._timers.pop(job_id, None)
        row = self._latest.get(job_id)
        if self._waits.get(job_id) != wait or row is None:
            return
        kind = wait[0]
        settings = self.settings()
        if not settings.kinds[kind]:
            return
        self.send(self.note(kind, row), settings)
        if kind == "question" and settings.reminder_s:
            self._timers[job_id] = self._clock.call_later(settings.reminder_s, self._remind, job_id, wait)

    def removed(self, row):
        self._waits.pop(row["id"], None)
        self._latest.pop(row["id"], None)
        self._cancel(row["id"])

    def event(self, event):
        """The feed: a task's workspace that reached review; a keeper that died unasked
        (issue 26: a security event, told once, whatever the settings)."""
        if event.get("kind") == "keeper" and event.get("lost"):
            self.send({"kind": "security", "id": None, "name": "roost", "title": "roost: the keeper died unasked",
                       "body": mask(first_line(event.get("text"))), "waitingFor": None,
                       "at": self._clock.now_ms(), "reminder": False}, self.settings())
            return
        if event.get("kind") != "task" or event.get("why") != "stage" or event.get("task") is None:
            return
        task = self._board_task(event["task"])
        workspace = (task or {}).get("workspace") or {}
        if workspace.get("stage") != "review":
            return
        told = (task["id"], workspace.get("stageAt"))
        if told in self._reviews:
            return
        self._reviews.add(told)
        settings = self.settings()
        if settings.kinds["review"]:
            owner = task.get("owner") or {}
            row = {"id": owner.get("id"), "name": owner.get("name") or f"task #{task['id']}",
                   "summary": f"#{task['id']} {task.get('title') or ''}: {workspace.get('note') or 'review'}"}
            self.send(self.note("review", row, task=task["id"]), settings)

    def later(self, row, seconds):
        """Not now (a page of `roost web`): the row's wait is told again in `seconds`, as a
        reminder, whatever `reminderMinutes` says; None when it waits for nothing."""
        kind = need(row)
        if kind is None:
            return None
        job_id = row["id"]
        wait = (kind, row.get("stateSince"))
        self._waits[job_id] = wait
        self._latest[job_id] = row
        self._cancel(job_id)
        self._timers[job_id] = self._clock.call_later(seconds, self._remind, job_id, wait)
        return self._clock.now_ms() + int(seconds * 1000)

    def _remind(self, job_id, wait):
        self._timers.pop(job_id, None)
        row = self._latest.get(job_id)
        if self._waits.get(job_id) != wait or row is None:
            return
        self.send(self.note(wait[0], row, reminder=True), self.settings())

    def _cancel(self, job_id):
        timer = self._timers.pop(job_id, None)
        if timer is not None:
            timer.kill(block=False)

    # -- what is told -----------------------------------------------------------------

    def note(self, kind, row, reminder=False, task=None):
        name = row.get("name") or row.get("id") or "roost"
        if kind == "failure":
            what = row.get("error") or row.get("summary") or "it failed"
        elif kind == "limit":
            resets = row.get("resetsAt")
            what = (f"it resets at {limits.clock(resets)}" if resets
                    else "the screen gives no reset time") + f": {row.get('summary') or ''}"
        elif kind == "dialog":
            what = row.get("question") or row.get("summary") or "a dialog waits for an answer"
        elif kind == "budget":
            what = (row.get("budgetHold") or {}).get("why") or "it went over a budget"
            what += f" (roost budget allow {row.get('id')})"
        else:
            what = row.get("question") or row.get("summary") or "it waits for an answer"
        title = f"roost: {name} {SAYS[kind]}" + (" (still waiting)" if reminder else "")
        note = {"kind": kind, "id": row.get("id"), "name": mask(name), "title": mask(title),
                "body": mask(first_line(what)), "waitingFor": row.get("waitingFor"),
                "at": self._clock.now_ms(), "reminder": reminder}
        if task is not None:
            note["task"] = task
        page = self.page_url()
        if page and row.get("id"):
            note["url"] = f"{page}/#job={quote(str(row['id']), safe='')}"
        return note

    def page_url(self):
        """Where people open `roost web`'s page (roost.json's `web.url`, else its
        `behindProxy`): a notification links to its job there."""
        web = self._config.get("web")
        if not isinstance(web, dict):
            return None
        url = web.get("url") or web.get("behindProxy")
        return url.rstrip("/") if isinstance(url, str) and url.startswith(("https://", "http://")) else None

    def send(self, note, settings, wait=False):
        """To each sink the settings name; with `wait`, [(sink, ok, why not)] once done."""
        results = []
        if settings.terminal:
            self._push(sinks.terminal_push(note))
            results.append(("terminal", True, None))
        runs = []
        if settings.desktop:
            if note.get("id") and self.looked_at(note["id"]) and not wait:
                log.info("no desktop notification for %s: a person looks at it", note["id"])
            else:
                runs.append(("desktop", gevent.spawn(sinks.desktop, note)))
        if settings.command:
            runs.append(("command", gevent.spawn(sinks.command, note, settings.command)))
        if not wait:
            for name, run in runs:
                run.link_value(lambda done, name=name: _logged(name, done.value))
            return None
        for name, run in runs:
            ok, why = run.get()
            results.append((name, ok, why))
        return results

    def test(self):
        """`roost notify test`: one notification to each sink the settings name."""
        note = {"kind": "test", "id": None, "name": "roost", "title": "roost: a test notification",
                "body": "roost notify test: this sink works", "waitingFor": None,
                "at": self._clock.now_ms(), "reminder": False}
        return self.send(note, self.settings(), wait=True)


def _logged(name, outcome):
    ok, why = outcome
    if not ok:
        log.warning("the %s notification was not sent: %s", name, why)
