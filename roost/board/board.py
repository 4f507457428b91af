"""The board's tasks as roost keeps them: `tasks.json` (version 2, through roost.store,
fields this version does not know kept), at most 200 tasks (done and dropped ones go
first when it is full), and the counts hubs are pushed (M47, M54).

A task is the spec's BoardTask: {id, title, detail, state: open | claimed | done |
dropped, after, by, at, owner, claimedAt, doneAt, result, assigned, project, waiting,
workspace?}. TaskBoard is the one place they change: `save()` after each change, before
the action answers.
"""

import logging
import os

from roost import store
from roost.clock import now_ms
from roost.errors import FULL, RoostError

log = logging.getLogger(__name__)

FILE = "tasks.json"
VERSION = 2
MAX_TASKS = 200
STATES = ("open", "claimed", "done", "dropped")
# A task in a workspace (M54) is counted by its stage: in `workspaces` until merged or
# dropped, and in `needsYou` while it waits for a person.
NEEDS_YOU = ("review", "conflict", "failed")


class TaskBoard:
    def __init__(self, home):
        self.path = os.path.join(home, FILE)
        self.data = {"version": VERSION, "nextId": 1, "tasks": []}

    def load(self):
        data = store.read_json(self.path)
        if data is None:
            return
        if data.get("version", VERSION) > VERSION:
            log.warning("%s is of a newer version (%s): read as version %d", self.path, data.get("version"), VERSION)
        data.setdefault("tasks", [])
        data["tasks"] = [task for task in data["tasks"] if isinstance(task, dict) and isinstance(task.get("id"), int)]
        data.setdefault("nextId", max([task["id"] for task in data["tasks"]], default=0) + 1)
        data["version"] = VERSION
        self.data = data

    def save(self):
        store.write_json(self.path, self.data)

    # -- reading ------------------------------------------------------------------------

    @property
    def tasks(self):
        return self.data["tasks"]

    def get(self, task_id):
        for task in self.tasks:
            if task["id"] == task_id:
                return task
        return None

    def blocked(self, task):
        """Tasks it waits on that still hold it: one with a workspace until merged, one
        of another project until done (its stage does not count), any other until done;
        a dropped one never holds."""
        holding = []
        for other_id in task.get("after") or []:
            other = self.get(other_id)
            if other is None or other["state"] == "dropped":
                continue
            workspace = other.get("workspace")
            if workspace and other.get("project") == task.get("project"):
                if workspace.get("stage") != "merged":
                    holding.append(other_id)
            elif other["state"] != "done":
                holding.append(other_id)
        return holding

    def counts(self):
        counts = {"open": 0, "claimed": 0, "blocked": 0, "done": 0, "workspaces": 0, "needsYou": 0}
        for task in self.tasks:
            workspace = task.get("workspace")
            if workspace and workspace.get("stage") != "merged" and task["state"] != "dropped":
                counts["workspaces"] += 1
                if workspace.get("stage") in NEEDS_YOU:
                    counts["needsYou"] += 1
                continue
            if task["state"] == "open":
                counts["blocked" if self.blocked(task) else "open"] += 1
            elif task["state"] in ("claimed", "done"):
                counts[task["state"]] += 1
        return counts

    # -- changing -----------------------------------------------------------------------

    def add(self, title, detail, after, project, by):
        if len(self.tasks) >= MAX_TASKS:
            self._evict()
        task = {"id": self.data["nextId"], "title": title, "detail": detail, "state": "open",
                "after": list(after), "by": by, "at": now_ms(), "owner": None, "claimedAt": None,
                "doneAt": None, "result": None, "assigned": None, "project": project, "waiting": []}
        self.data["nextId"] += 1
        self.tasks.append(task)
        return task

    def _evict(self):
        """Room for one more: the oldest done or dropped task goes."""
        for task in sorted(self.tasks, key=lambda task: task.get("doneAt") or task.get("at") or 0):
            if task["state"] in ("done", "dropped") and not _holds_work(task):
                self.tasks.remove(task)
                return
        raise RoostError(FULL, f"the board holds {MAX_TASKS} tasks and none of them is done or dropped")


def _holds_work(task):
    """A done task whose worktree is still there keeps its place (cleanup removes it),
    and so does one with a worktree prepared for it."""
    workspace = task.get("workspace")
    return bool(task.get("prepared")) or bool(workspace and workspace.get("path")
                                               and workspace.get("stage") not in ("merged", "shelved"))
