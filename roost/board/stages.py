"""Where a task's workspace is in its loop (M54-M59), as data: the stages, the moves
allowed between them, and the one mutator that checks a move, applies it, saves the
board and then tells the feed (a `task` event with `why: "stage"`) and the hubs (the
counts), as JobRegistry.change does for a job's row.

    (started) -> working -> verifying -> review -> merging -> merged
                    ^  \\__ no verify ___/  |  \\       |
                    |                      |   \\      +-> conflict -> (abort) review
                    +---- back / failed ---+    +-> shelved -> (start) working

For such a task the stage is the truth; `state` follows the claim as for any task
(open, claimed), and `merged` is `state: done`.
"""

from roost.clock import now_ms
from roost.errors import CONFLICT, RoostError
from roost.states import check_table

STAGES = ("working", "verifying", "review", "merging", "conflict", "failed", "shelved", "merged")
# Work goes on in these: the worktree is there, and someone (a session or a person) acts.
ACTIVE = ("working", "verifying", "review", "merging", "conflict", "failed")

# stage -> the stages it may move to (None: a workspace not started yet). Staying in a
# stage is always allowed: its note or fields change, and no event is told. Beside each
# line's own moves: `merged` wherever the branch can be merged by hand (seen when the
# board is listed), `shelved` wherever the worktree can vanish under roost (removed by
# hand: seen at the daemon's start), `failed` wherever the worktree's `.git` can be found
# pointing elsewhere than git made it (roost.git.checkouts).
TRANSITIONS = check_table({
    None: {"working"},                                                   # the first start
    "working": {"verifying", "review", "shelved", "merged", "failed"},   # done (verify, or none); shelve
    "verifying": {"review", "working", "failed", "shelved"},             # exit 0; a failure; past maxRounds
    "review": {"working", "verifying", "merging", "shelved", "merged", "failed"},  # back; verify; merge
    "merging": {"merged", "conflict", "review", "verifying", "working", "failed"},  # landed; conflict; refused
    "conflict": {"working", "review", "verifying", "merging", "shelved", "merged", "failed"},  # back; abort
    "failed": {"working", "verifying", "review", "shelved", "merged"},   # back/start; verify; pass
    "shelved": {"working", "merged"},                                    # start brings it back
    "merged": set(),
}, STAGES, before_first=None)

_KEEP = object()


def can_move(current, stage):
    return stage == current or stage in TRANSITIONS.get(current, ())


class Stages:
    """The one mutator of a workspace's stage."""

    def __init__(self, board, actions):
        self.board = board
        self.actions = actions          # roost.board.actions.BoardActions: events, counts, waiters

    def move(self, task, stage, note=_KEEP, actor=None, **fields):
        """Move `task`'s workspace to `stage` (refused as `conflict` when the table does
        not allow it), with its `note` and other workspace fields; saved, then told."""
        workspace = task["workspace"]
        current = workspace.get("stage")
        if stage not in STAGES:
            raise ValueError(f"not a stage: {stage!r}")
        if not can_move(current, stage):
            raise RoostError(CONFLICT, f"task #{task['id']} is {current or 'not started'}: "
                             f"it cannot go to {stage} from there")
        workspace["stage"] = stage
        if note is not _KEEP:
            workspace["note"] = note
        workspace.update(fields)
        workspace["stageAt"] = now_ms()
        if stage == "merged":
            task.update(state="done", doneAt=now_ms())
        if stage == current:
            self.board.save()
            return task
        suffix = f": {stage}" + (f" ({workspace['note']})" if workspace.get("note") else "")
        self.actions.changed(actor, task, "stage", suffix, session=task.get("owner"))
        if stage == "merged":
            self.actions.opened_by(task)        # the tasks that waited on its merge
        return task
