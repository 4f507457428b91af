"""Each task's workspace is changed by one greenlet at a time: `TaskLocks.lock(task_id)`.
A git run refused in a worktree whose `.git` was made to point elsewhere
(roost.git.checkouts) fails the task on its way out, with the refusal as its note."""

import collections
import contextlib
import logging

import gevent.lock

from roost.board.stages import ACTIVE as ACTIVE_STAGES
from roost.git.errors import GitError

log = logging.getLogger(__name__)


class TaskLocks:
    def __init__(self, board, stages):
        self.board = board
        self.stages = stages
        self._locks = collections.defaultdict(gevent.lock.RLock)

    @contextlib.contextmanager
    def lock(self, task_id):
        """The task's workspace, one greenlet at a time."""
        with self._locks[task_id]:
            try:
                yield
            except GitError as error:
                if error.reason == "tampered":
                    self.fail_tampered(self.board.get(task_id), error)
                raise

    def fail_tampered(self, task, error):
        """Stage failed, with the refusal as its note (once: its stage may be failed already)."""
        workspace = (task or {}).get("workspace") or {}
        if workspace.get("stage") in ACTIVE_STAGES:
            log.warning("task #%s: %s", task["id"], error.text)
            self.stages.move(task, "failed", note=f"refused: {error.text}")
