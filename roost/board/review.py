"""Review (M55, M58): a person's comments on lines of the task's diff, and `back`, which
returns the task to its holder with them.

A comment is {file, line, text, lineText?, tip?, at, by}; a task keeps at most 200.
`back` sends the note and the comments to the live holder in one message from roost and
clears them; with no live holder they stay for the next `start`'s prompt.
"""

from roost.board import task_git
from roost.clock import now_ms
from roost.errors import FULL, NOT_FOUND, RoostError, bad_request
from roost.events.bus import one_line

MAX_COMMENTS = 200
TEXT = 2000
FILE = 1000
LINE_TEXT = 500
NOTE = 500


class Reviews:
    def __init__(self, board, actions, stages, locks):
        self.board = board
        self.actions = actions
        self.stages = stages
        self.locks = locks

    def comment(self, actor, task_id, comment):
        task = self.actions.task(actor, task_id)
        with self.locks.lock(task_id):
            workspace = task_git.workspace(task)
            if workspace["stage"] == "merged":
                raise bad_request(f"task #{task_id} is merged: there is nothing left to review")
            comments = workspace.setdefault("comments", [])
            if len(comments) >= MAX_COMMENTS:
                raise RoostError(FULL, f"task #{task_id} holds {MAX_COMMENTS} review comments")
            kept = _checked(comment)
            kept.update(at=now_ms(), by=actor.by["who"])
            comments.append(kept)
            self.actions.changed(actor, task, "comment", f": {kept['file']}:{kept['line']}")
        return task

    def uncomment(self, actor, task_id, index=None, comment=None):
        """Withdraw one: by its index, or by {file, line, at} (the spec's)."""
        task = self.actions.task(actor, task_id)
        with self.locks.lock(task_id):
            comments = task_git.workspace(task).setdefault("comments", [])
            position = _find(comments, index, comment)
            if position is None:
                raise RoostError(NOT_FOUND, f"task #{task_id} has no such review comment")
            gone = comments.pop(position)
            self.actions.changed(actor, task, "comment", f": {gone['file']}:{gone['line']} withdrawn")
        return task

    def back(self, actor, task_id, note=None):
        """M55: back to working; the holder is told with the note and the comments."""
        task = self.actions.task(actor, task_id)
        note = one_line(note, NOTE) if note else None
        with self.locks.lock(task_id):
            workspace = task_git.workspace(task, "review", "failed", "conflict")
            in_conflict = workspace["stage"] == "conflict"
            self.stages.move(task, "working", note=note, actor=actor)
            sent = self.actions.tell_holder(task, self.message(task, note, in_conflict))
            if sent in ("delivered", "queued", "started"):
                workspace["comments"] = []
                self.board.save()
        return task, sent

    def message(self, task, note, in_conflict=False):
        workspace = task["workspace"]
        lines = [f"Task #{task['id']} ({task['title']}) is back with you from review."]
        if note:
            lines.append(f"Note: {note}")
        comments = workspace.get("comments") or []
        if comments:
            lines += ["", "Review comments:"] + [self.describe(comment) for comment in comments]
        if in_conflict:
            lines += ["", "Syncing with base stopped on conflicts: resolve them in your worktree and commit."]
        lines += ["", f"Commit the changes in your worktree, then `roost task done {task['id']}` again."]
        return "\n".join(lines)

    @staticmethod
    def describe(comment):
        where = f"{comment['file']}:{comment['line']}"
        shown = f" (`{comment['lineText']}`)" if comment.get("lineText") else ""
        return f"- {where}{shown}: {comment['text']}"


def _checked(comment):
    if not isinstance(comment, dict):
        raise bad_request("comment must be an object {file, line, text, lineText?, tip?}")
    file, line, text = comment.get("file"), comment.get("line"), comment.get("text")
    if not isinstance(file, str) or not file.strip() or len(file) > FILE:
        raise bad_request("comment.file must be a path in the diff")
    if isinstance(line, bool) or not isinstance(line, int) or line < 0:
        raise bad_request("comment.line must be a line number")
    if not isinstance(text, str) or not text.strip():
        raise bad_request("comment.text must not be empty")
    kept = {"file": file.strip(), "line": line, "text": text.strip()[:TEXT]}
    if isinstance(comment.get("lineText"), str):
        kept["lineText"] = one_line(comment["lineText"], LINE_TEXT)
    if isinstance(comment.get("tip"), str):
        kept["tip"] = comment["tip"][:64]
    return kept


def _find(comments, index, comment):
    if index is not None:
        if isinstance(index, bool) or not isinstance(index, int):
            raise bad_request("index must be an integer")
        return index if 0 <= index < len(comments) else None
    if not isinstance(comment, dict):
        raise bad_request("uncomment names a comment: {file, line, at}, or its index")
    for position, kept in enumerate(comments):
        if (kept["file"], kept["line"], kept["at"]) == (comment.get("file"), comment.get("line"), comment.get("at")):
            return position
    return None
