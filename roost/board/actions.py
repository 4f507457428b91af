"""The board's actions (M47, M52): list, add, claim, done, release, drop, assign, with
their rules; who may take which is roost.ops.callers' (checked before they run).

An actor is the hub (`user`), the concierge, or a session: a job, or a foreground peer,
with its project (the git repository it works in, a worktree counting as its repository;
none outside one). A session sees, claims and finishes its project's tasks and those for
any session; another project's task is `not_found` to it. Every change is saved before
the action answers, is a `task` event in the feed, and pushes the board's counts.
"""

import logging

from roost import git
from roost.board import path_claims, places
from roost.clock import now_ms
from roost.errors import BLOCKED, CONFLICT, UNSUPPORTED, RoostError, bad_request, not_found
from roost.events.bus import one_line
from roost.peers import envelope
from roost.peers.directory import Peer

log = logging.getLogger(__name__)

MAX_WAITING = 20
TITLE = 200
DETAIL = 2000
RESULT = 2000
ENDED = ("failed", "stopped")      # a job that ended so holds nothing


class Actor:
    """Who takes an action: kind "user", "concierge" or "session" (`peer` set)."""

    __slots__ = ("kind", "peer", "project")

    def __init__(self, kind, peer=None, project=None):
        self.kind = kind
        self.peer = peer
        self.project = project

    @property
    def person(self):
        return self.kind in ("user", "concierge")

    @property
    def by(self):
        if self.peer is None:
            return {"who": self.kind, "whoId": None}
        return {"who": self.peer.name, "whoId": self.peer.id}


def project_of(directory, tasks=()):
    """The root of the git repository `directory` is in, or None. A directory in one of
    `tasks`' worktrees is that task's project, from the board's own record: the
    worktree's `.git` file is the agent's to rewrite, and found through it the project
    would be whatever repository the agent made."""
    if not directory:
        return None
    for task in tasks:
        path = (task.get("workspace") or task.get("prepared") or {}).get("path")
        if path and task.get("project") and places.inside(directory, path):
            return task["project"]
    repository = git.repository_of(directory)
    return repository.root if repository is not None else None


class BoardActions:
    def __init__(self, board, registry, directory, messenger, bus, push):
        self.board = board
        self.registry = registry
        self.directory = directory
        self.messenger = messenger
        self.bus = bus
        self.push = push                  # fn(message): to every subscribed hub
        # fn(actor, task, result) -> the task, or None when the task is not its part's: a
        # task in its own worktree is done when it is merged (M55, roost.board.workspaces)
        self.done_by = []

    # -- reading ------------------------------------------------------------------------

    def visible(self, actor, project_dir=None):
        if actor.person:
            if project_dir is None:
                return list(self.board.tasks)
            project = self.named_project(project_dir)
            return [task for task in self.board.tasks if task.get("project") == project]
        return [task for task in self.board.tasks if task.get("project") in (None, actor.project)]

    def named_project(self, directory):
        if not isinstance(directory, str) or not directory.startswith("/"):
            raise bad_request("project must be an absolute path (a directory in the project's repository)")
        project = project_of(directory, self.board.tasks)
        if project is None:
            raise bad_request(f"{directory} is in no git repository")
        return project

    def task(self, actor, task_id):
        task = self.board.get(task_id)
        if task is None or (not actor.person and task.get("project") not in (None, actor.project)):
            raise not_found(f"no task #{task_id}" + ("" if actor.person else " for this session's project"))
        return task

    # -- the plain actions --------------------------------------------------------------

    def add(self, actor, title, detail=None, after=(), project_dir=None, project_given=False):
        title = one_line(title, TITLE)
        if not title:
            raise bad_request("title must not be empty")
        for other in after:
            if self.board.get(other) is None:
                raise bad_request(f"after names #{other}, which is not on the board")
        if actor.person:
            project = self.named_project(project_dir) if project_given and project_dir is not None else None
        else:
            project = actor.project
        task = self.board.add(title, (detail or "")[:DETAIL] or None, after, project, actor.by)
        self.changed(actor, task, "add")
        return task

    def claim(self, actor, task_id):
        task = self.task(actor, task_id)
        if task["state"] in ("done", "dropped"):
            raise bad_request(f"task #{task_id} is {task['state']}")
        holding = self.board.blocked(task)
        if holding:
            waiting = task.setdefault("waiting", [])
            if all(entry["id"] != actor.peer.id for entry in waiting) and len(waiting) < MAX_WAITING:
                waiting.append({"id": actor.peer.id, "name": actor.peer.name})
                self.board.save()
            raise RoostError(BLOCKED, f"task #{task_id} waits on " + ", ".join(f"#{other}" for other in holding)
                             + ": you are told when it can be claimed")
        owner = task.get("owner")
        if owner and owner["id"] == actor.peer.id:
            return task
        if owner and self.holds(owner["id"]):
            raise RoostError(CONFLICT, f"task #{task_id} is held by {owner['name']} ({owner['id']})")
        if owner:
            self._release(task, "its session is gone", tell=False)
        task.update(state="claimed", owner={"id": actor.peer.id, "name": actor.peer.name}, claimedAt=now_ms(),
                    assigned=None)
        task["waiting"] = [entry for entry in task.get("waiting") or [] if entry["id"] != actor.peer.id]
        self.changed(actor, task, "claim")
        return task

    def done(self, actor, task_id, result=None):
        task = self.task(actor, task_id)
        self._owners_or_a_person(actor, task, "done")
        if task["state"] != "claimed":
            raise bad_request(f"task #{task_id} is {task['state']}, not claimed")
        for finish in self.done_by:
            finished = finish(actor, task, result)
            if finished is not None:
                return finished
        holder = task["owner"]
        task.update(state="done", doneAt=now_ms(), result=(result or "")[:RESULT] or None)
        self.changed(actor, task, "done", f": {result}" if result else "")
        if actor.person and holder:
            self.tell(holder["id"], f"Task #{task['id']} ({task['title']}) was marked done by the {actor.kind}.")
        self.opened_by(task)
        return task

    def release(self, actor, task_id):
        task = self.task(actor, task_id)
        self._owners_or_a_person(actor, task, "release")
        if task["state"] != "claimed":
            raise bad_request(f"task #{task_id} is {task['state']}, not claimed")
        self._release(task, f"released by the {actor.kind}" if actor.person else "given back",
                      tell=actor.person, actor=actor)
        return task

    def drop(self, actor, task_id):
        task = self.task(actor, task_id)
        if task["state"] == "done":
            raise bad_request(f"task #{task_id} is done: it stays on the board")
        if task["state"] == "dropped":
            raise bad_request(f"task #{task_id} is dropped already")
        holder = task.get("owner")
        task.update(state="dropped", owner=None, assigned=None, doneAt=now_ms())
        self.changed(actor, task, "drop")
        if holder:
            self.tell(holder["id"], f"Task #{task['id']} ({task['title']}) was taken off the board: stop work on it.")
        self.opened_by(task)
        return task

    def assign(self, actor, task_id, to):
        task = self.task(actor, task_id)
        if task["state"] != "open":
            raise bad_request(f"task #{task_id} is {task['state']}: only an open task is handed over")
        if task.get("assigned") and task["assigned"].get("pending"):
            raise bad_request(f"task #{task_id} is being handed over already")
        target = self.directory.find(_anyone(), to)
        if target.job is not None and not target.job.protocol and not target.job.launch.get("profile"):
            raise RoostError(UNSUPPORTED, f"{target.name} is a command, not an agent: it cannot take a task")
        if task.get("project") is not None and self._project_of_peer(target) != task["project"]:
            raise RoostError(UNSUPPORTED, f"{target.name} works outside task #{task_id}'s project")
        before = task.get("assigned")
        task["assigned"] = {"id": target.id, "name": target.name, "at": now_ms(), "pending": True}
        try:
            outcome = self.messenger.deliver(target, "message", envelope.from_roost(
                f"Task #{task['id']} on the board is handed to you: {task['title']}"
                + (f"\n\nIts detail, as its author wrote it:\n{envelope.quoted(task['detail'])}"
                   if task.get("detail") else "")
                + f"\n\nClaim it first: `roost task claim {task['id']}` (or the task op's claim), "
                  f"then `roost task done {task['id']}` when it is finished."))["outcome"]
        except BaseException:
            task["assigned"] = before       # refused on the way: the task is as it was
            raise
        task["assigned"].pop("pending", None)
        if outcome in ("delivered", "queued", "started"):
            self.changed(actor, task, "assign", f": to {target.name}")
        else:
            task["assigned"] = before
        return task, outcome

    def claim_for(self, task, session, actor=None):
        """M55: the task claimed for a session roost started on it (`start`)."""
        task.update(state="claimed", owner={"id": session["id"], "name": session["name"]}, claimedAt=now_ms(),
                    assigned=None)
        task["waiting"] = [entry for entry in task.get("waiting") or [] if entry["id"] != session["id"]]
        self.changed(actor, task, "claim", f": to {session['name']}", session=session)
        return task

    def give_back(self, task, why, actor=None):
        """The claim given back (a shelved task's), its holder told."""
        if task["state"] == "claimed":
            self._release(task, why, tell=True, actor=actor)

    # -- claims of sessions that end ------------------------------------------------------

    def row_changed(self, row, before):
        if row["state"] in ENDED and (before is None or before.get("state") != row["state"]):
            self._release_all(row["id"], f"its session {row['state']}")

    def removed(self, row):
        self._release_all(row["id"], "its session was removed")

    def _release_all(self, session_id, why):
        for task in self.board.tasks:
            owner = task.get("owner")
            if task["state"] == "claimed" and owner and owner["id"] == session_id:
                self._release(task, why, tell=False)

    def holds(self, session_id):
        if session_id in self.directory.foreground:
            return True
        job = self.registry.get(session_id)
        return job is not None and job.state not in ENDED

    def holder(self, task):
        """{id, name} of the live session that holds the task, or None."""
        owner = task.get("owner")
        if task["state"] == "claimed" and owner and self.holds(owner["id"]):
            return owner
        return None

    def tell_holder(self, task, text):
        """A note to the task's live holder: how it went, or None (no live holder)."""
        holder = self.holder(task)
        return self.tell(holder["id"], text) if holder else None

    # -- helpers ---------------------------------------------------------------------------

    def _owners_or_a_person(self, actor, task, action):
        owner = task.get("owner")
        if not actor.person and (owner is None or owner["id"] != actor.peer.id):
            if owner is None:
                raise bad_request(f"task #{task['id']} is not claimed")
            raise RoostError(UNSUPPORTED, f"task #{task['id']} is {owner['name']}'s: only its holder may {action} it")

    def _release(self, task, why, tell, actor=None):
        holder = task.get("owner")
        task.update(state="open", owner=None, claimedAt=None)
        path_claims.released_with_claim(task)
        self.changed(actor, task, "release", f": {why}", session=holder)
        if tell and holder:
            self.tell(holder["id"], f"Task #{task['id']} ({task['title']}) was given back to the board: {why}.")

    def opened_by(self, finished):
        """The tasks that waited on `finished` and now can be claimed: their waiting
        sessions, the one each was handed to and the one that added it are told."""
        for task in self.board.tasks:
            if finished["id"] not in (task.get("after") or ()) or task["state"] != "open" or self.board.blocked(task):
                continue
            told = {entry["id"] for entry in task.get("waiting") or []}
            told |= {(task.get("assigned") or {}).get("id"), (task.get("by") or {}).get("whoId")}
            task["waiting"] = []
            self.changed(None, task, "open")
            for session_id in told - {None}:
                self.tell(session_id, f"Task #{task['id']} on the board can be claimed now: {task['title']}")

    def tell(self, session_id, text):
        """A note from roost to a session; how it went (`delivered`, `queued`, ...), or
        None when it did not reach it."""
        peer = next((peer for peer in self.directory.candidates(_anyone()) if peer.id == session_id), None)
        if peer is None:
            return None
        try:
            return self.messenger.deliver(peer, "message", envelope.from_roost(text))["outcome"]
        except RoostError as error:
            log.info("the board could not tell %s: %s", session_id, error.text)
            return None

    def _project_of_peer(self, peer):
        return project_of(peer.cwd, self.board.tasks)

    def changed(self, actor, task, why, suffix="", session=None):
        """Saved, told to the feed (about `session`, else the acting session) and the
        counts pushed."""
        self.board.save()
        about = session or ({"id": actor.peer.id, "name": actor.peer.name}
                            if actor is not None and actor.peer is not None else {})
        who = actor.by if actor is not None else {"who": "roost", "whoId": None}
        self.bus.publish("task", f"#{task['id']} {task['title']}{suffix}", about.get("id"), about.get("name"),
                         who=who["who"], who_id=who["whoId"], why=why, task=task["id"])
        self.push(dict({"event": "board"}, **self.board.counts()))


def _anyone():
    """An asker that is no session: `find` then looks at every session."""
    return Peer("roost", "roost", "job", None, None, "")

