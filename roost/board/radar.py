"""The overlap radar (issue 20): which files each live workspace touches, which pairs of
one repository touch the same ones, and whether git predicts their branches conflict;
told to both holders once, while changing course is still cheap.

A live workspace is a task's worktree not merged, shelved or dropped. What it touches
(roost.git.overlap.touched_files: committed against base, and not committed yet) is read
again when something may have changed it, never by a poll of every worktree:

- its holder goes quiet (the job's row leaves `working`: `row_changed`);
- the board's own `commit` action (`soon`);
- a branch tip seen moved while another task's refresh compares against it.

Two workspaces overlap when they touch a file in common, or when one touches a file the
other task claimed (roost.board.path_claims; a task with claims and no workspace yet
counts from the start). For each overlapping pair git predicts the merge of the two
tips (`git merge-tree`, cached per pair of commits). Kept on the task as
`workspace.overlaps: [{task, files, conflicts, note?}]` (`conflicts`: the files git
predicts to conflict, [] for none, null when it cannot say); each change is saved, then
pushed to the hubs as a `board` change, and an overlap that starts or a conflict that
appears is a `task` event with `why: "overlap"`. Each holder is told in a message from
roost, once per pair and files, and once more should git come to predict a conflict it
did not when they were told (`overlapsTold` on the task: kept across a restart).

Refreshes run in a greenlet of their own per task (one at a time, a request meanwhile
runs it once more after); git waits cooperatively, so the loop never waits on it.
"""

import logging
import time

import gevent
import gevent.pool

from roost import git
from roost.board import path_claims, task_git
from roost.board.stages import ACTIVE
from roost.git import overlap as git_overlap
from roost.git.errors import GitError

log = logging.getLogger(__name__)

FILES_SHOWN = 50         # files kept in an overlap and named in a message
TOLD_KEPT = 50           # pairs remembered as told, a task
PREDICTIONS_KEPT = 2000  # merge predictions cached (pairs of commits)
READS_AT_ONCE = 4        # other worktrees read at the same time


def is_live(task):
    workspace = task.get("workspace") or {}
    return workspace.get("stage") in ACTIVE and task["state"] != "dropped" and bool(workspace.get("path"))


def _with_claims(task):
    return bool(task.get("paths")) and task["state"] not in ("done", "dropped")


def _claimed_by_another(claiming, editing):
    """Whether `claiming`'s paths are claimed by someone other than `editing`'s holder."""
    claimant = path_claims.claimant(claiming)
    return claimant is None or claimant != (editing.get("owner") or {}).get("id")


class Radar:
    def __init__(self, board, actions):
        self.board = board
        self.actions = actions
        self._touched = {}          # task id -> git_overlap.Touched
        self._predictions = {}      # (tip, tip) -> git_overlap.Prediction
        self._running = {}          # task id -> its refresh greenlet
        self._again = set()
        self.last_refresh_s = None  # how long the last refresh took (the bench reads it)

    # -- what starts a refresh ------------------------------------------------------------

    def row_changed(self, row, before):
        """A holder that goes quiet (its row leaves `working`) may have changed files."""
        if before is None or before.get("state") != "working" or row.get("state") == "working":
            return
        for task in self.board.tasks:
            if (task.get("owner") or {}).get("id") == row["id"] and is_live(task):
                self.soon(task["id"])

    def heard(self, event):
        """The feed's `task` events: a workspace that is no longer live leaves the radar;
        a claim on paths changed or given back is compared again."""
        if event.get("kind") != "task" or not isinstance(event.get("task"), int):
            return
        task = self.board.get(event["task"])
        if task is None:
            return
        if event.get("why") in ("stage", "drop", "release", "paths") and not is_live(task):
            self.forget(task)
        if event.get("why") in ("paths", "release"):
            for other in self._live(task.get("project")):
                self.soon(other["id"])

    def soon(self, task_id):
        """Refresh the task in a greenlet of its own (again once after, when one runs)."""
        if task_id in self._running:
            self._again.add(task_id)
            return
        self._running[task_id] = gevent.spawn(self._refresh_in_turn, task_id)

    def _refresh_in_turn(self, task_id):
        try:
            while True:
                self._again.discard(task_id)
                try:
                    self.refresh(task_id)
                except Exception:
                    log.exception("the radar's refresh of task #%s failed", task_id)
                if task_id not in self._again:
                    return
        finally:
            self._running.pop(task_id, None)

    def wait_idle(self, timeout=None):
        """Until no refresh runs (the bench's; a test asks the board instead)."""
        gevent.joinall(list(self._running.values()), timeout=timeout)

    # -- a refresh ------------------------------------------------------------------------

    def refresh(self, task_id):
        """Read what the task touches, then compare it with every other task of its
        repository; saved and told when anything changed."""
        started = time.monotonic()
        task = self.board.get(task_id)
        if task is None or not is_live(task):
            if task is not None:
                self.forget(task)
            return
        if self._read(task, force=True) is None:
            return
        others = [other for other in self.board.tasks if other is not task
                  and other.get("project") == task.get("project") and (is_live(other) or _with_claims(other))]
        # the others' reads (each only when its branch moved or it was never read) go on
        # together, a few at a time: each is two git runs that mostly wait on the disk
        gevent.pool.Pool(READS_AT_ONCE).map(self._read, [other for other in others if is_live(other)])
        entries = {other["id"]: (self._entry(task, other), self._entry(other, task)) for other in others}
        self._predict(task, others, entries)
        self._apply(task, others, entries)
        self.last_refresh_s = time.monotonic() - started

    def _read(self, task, force=False):
        """Touched of a live task: read again when forced or when its branch moved since."""
        workspace = task["workspace"]
        known = self._touched.get(task["id"])
        try:
            repo = task_git.repository(task)
            if known is not None and not force and git.ref_sha(repo, workspace["branch"]) == known.tip:
                return known
            place = task_git.checkout(task)
            touched = git_overlap.touched_files(repo, place, workspace["baseRef"], workspace["branch"])
        except Exception as error:      # a worktree removed meanwhile, a tampered one, a branch gone
            text = getattr(error, "text", None) or repr(error)
            log.info("the radar cannot read task #%s's worktree: %s", task["id"], text)
            return known
        self._touched[task["id"]] = touched
        return touched

    def _files(self, task):
        known = self._touched.get(task["id"]) if is_live(task) else None
        return known.files if known is not None else frozenset()

    def _entry(self, task, other):
        """The overlap of `task` with `other` as `task` sees it (no conflicts yet), or
        None: the files both touch, and those one touches that the other claimed."""
        if not is_live(task):
            return None
        mine, theirs = self._files(task), self._files(other)
        shared = set(mine & theirs)
        claimed = set()
        # a claim counts against everyone but the session that made it
        if _with_claims(other) and _claimed_by_another(other, task):
            claimed |= path_claims.matching(other["paths"]["globs"], mine)
        if _with_claims(task) and _claimed_by_another(task, other):
            claimed |= path_claims.matching(task["paths"]["globs"], theirs)
        files = sorted(shared | claimed)
        if not files:
            return None
        entry = {"task": other["id"], "files": files[:FILES_SHOWN], "conflicts": None}
        if len(files) > FILES_SHOWN:
            entry["more"] = len(files) - FILES_SHOWN
        if not shared:
            entry["note"] = "a claim on paths: " + ", ".join(((other if claimed & mine else task)
                                                              .get("paths") or {}).get("globs", [])[:5])
        return entry

    def _predict(self, task, others, entries):
        """git's prediction for each pair that shares files, both with a branch."""
        for other in others:
            entry, theirs = entries[other["id"]]
            if entry is None or not is_live(other) or "note" in entry:
                continue
            prediction = self.prediction(task, other)
            for side in (entry, theirs):
                if side is not None:
                    side["conflicts"] = prediction.conflicts
                    if prediction.note:
                        side["note"] = prediction.note

    def prediction(self, task, other):
        """git_overlap.Prediction of merging the two tasks' branch tips (cached)."""
        one, two = self._touched.get(task["id"]), self._touched.get(other["id"])
        if one is None or two is None:
            return git_overlap.Prediction(None, "a branch could not be read")
        key = tuple(sorted((one.tip, two.tip)))
        if key not in self._predictions:
            try:
                found = git_overlap.predict_merge(task_git.repository(task), *key)
            except GitError as error:
                return git_overlap.Prediction(None, f"git could not predict the merge: {error.text}")
            if len(self._predictions) >= PREDICTIONS_KEPT:
                self._predictions.clear()
            self._predictions[key] = found
        return self._predictions[key]

    # -- what changed, kept and told ----------------------------------------------------------

    def _apply(self, task, others, entries):
        """The new entries on both sides of each pair; saved, pushed, and told."""
        news = []
        changed = False
        mine = {}
        for other in others:
            entry, theirs = entries[other["id"]]
            if entry is not None:
                mine[other["id"]] = entry
            if is_live(other):
                changed |= self._set(other, task["id"], theirs, news)
        changed |= self._replace(task, mine, news)
        if not changed:
            return
        self.board.save()
        pairs = set()
        for holder_task, entry, started in news:
            pair = tuple(sorted((holder_task["id"], entry["task"])))
            if pair not in pairs:
                pairs.add(pair)
                self.actions.changed(None, holder_task, "overlap", ": " + describe(entry, started),
                                     session=holder_task.get("owner"))
        if not pairs:
            self.actions.push(dict({"event": "board"}, **self.board.counts()))
        for other in others:
            for one, two in ((task, other), (other, task)):
                entry = next((item for item in (one.get("workspace") or {}).get("overlaps") or []
                              if item["task"] == two["id"]), None)
                if entry is not None:
                    self._tell_once(one, two, entry)
                    if not is_live(two):
                        self._tell_once(two, one, dict(entry, task=one["id"]))

    def _set(self, task, other_id, entry, news):
        """`task`'s entry about `other_id` replaced by `entry` (None: removed)."""
        workspace = task["workspace"]
        kept = {item["task"]: item for item in workspace.get("overlaps") or []}
        before = kept.get(other_id)
        if entry is None:
            kept.pop(other_id, None)
        else:
            kept[other_id] = entry
        if before == entry:
            return False
        workspace["overlaps"] = [kept[key] for key in sorted(kept)]
        _note_news(task, before, entry, news)
        return True

    def _replace(self, task, entries, news):
        workspace = task["workspace"]
        before = {item["task"]: item for item in workspace.get("overlaps") or []}
        if before == entries:
            return False
        for other_id, entry in entries.items():
            _note_news(task, before.get(other_id), entry, news)
        workspace["overlaps"] = [entries[key] for key in sorted(entries)]
        return True

    def _tell_once(self, task, other, entry):
        """`task`'s holder told of the overlap with `other`, unless it was told of this
        pair and these files already."""
        told = task.setdefault("overlapsTold", [])
        conflict = bool(entry.get("conflicts"))
        # news is a file not told of yet, or a conflict git did not predict when told
        if any(item.get("task") == other["id"] and set(entry["files"]) <= set(item.get("files") or ())
               and (item.get("conflict") or not conflict) for item in told):
            return
        holder = self.actions.holder(task)
        if holder is None:
            return
        outcome = self.actions.tell(holder["id"], message(task, other, entry,
                                                          self.actions.holder(other) or other.get("owner")))
        if outcome is None:
            return
        told[:] = [item for item in told if item.get("task") != other["id"]][-(TOLD_KEPT - 1):]
        told.append({"task": other["id"], "files": list(entry["files"]), "conflict": conflict})
        self.board.save()

    def forget(self, task):
        """A task no longer live: its overlaps go, and so do the others' with it."""
        self._touched.pop(task["id"], None)
        changed = False
        workspace = task.get("workspace") or {}
        if workspace.get("overlaps"):
            workspace["overlaps"] = []
            changed = True
        for other in self.board.tasks:
            overlaps = (other.get("workspace") or {}).get("overlaps") or []
            if any(item["task"] == task["id"] for item in overlaps):
                other["workspace"]["overlaps"] = [item for item in overlaps if item["task"] != task["id"]]
                changed = True
        if changed:
            self.board.save()
            self.actions.push(dict({"event": "board"}, **self.board.counts()))

    def _live(self, project):
        return [task for task in self.board.tasks if task.get("project") == project and is_live(task)]


def _note_news(task, before, entry, news):
    if entry is None:
        return
    if before is None:
        news.append((task, entry, True))
    elif entry.get("conflicts") and not before.get("conflicts"):
        news.append((task, entry, False))


def describe(entry, started=True):
    """`overlaps #4 in a.txt, b.txt; git predicts a conflict in a.txt`."""
    files = ", ".join(entry["files"][:5]) + (" ..." if len(entry["files"]) > 5 or entry.get("more") else "")
    text = f"{'overlaps' if started else 'a conflict predicted with'} #{entry['task']} in {files}"
    if entry.get("conflicts"):
        text += f"; git predicts a conflict in {', '.join(entry['conflicts'][:5])}"
    elif entry.get("conflicts") == []:
        text += "; git predicts a clean merge"
    elif entry.get("note"):
        text += f" ({entry['note']})"
    return text


def message(task, other, entry, other_holder):
    """What a holder is told of an overlap with `other`."""
    who = f", held by {other_holder['name']}," if other_holder else ""
    files = ", ".join(entry["files"][:FILES_SHOWN]) + (f" and {entry['more']} more" if entry.get("more") else "")
    lines = [f"Task #{other['id']} ({other['title']}){who} touches files your task #{task['id']} touches too: "
             f"{files}."]
    if entry.get("conflicts"):
        lines.append(f"git predicts a conflict when both are merged, in {', '.join(entry['conflicts'])}.")
    elif entry.get("conflicts") == []:
        lines.append("git predicts the two branches merge cleanly (as committed now).")
    elif entry.get("note"):
        lines.append(f"git predicts nothing: {entry['note']}.")
    lines.append(f"Look at its changes with `roost task diff {other['id']}` before you go on; agree on who "
                 "changes what, or keep to other files.")
    return "\n".join(lines)
