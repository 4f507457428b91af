"""A session's spawned jobs (M9, issue 26 item 5): bounded while they live, and gone with
their tree's root.

- `spawn` is refused `full` once the session has 16 children running, or its tree (every
  job spawned under the same root, at any depth) has 64: a session that spawns in a loop
  cannot fill the machine with jobs, nor the daemon with rows.
- When a tree's root is removed (`rm`), every job spawned in that tree is stopped if it
  still runs and removed with it, row and directory: nothing of the tree stays behind.
"""

import logging

import gevent

from roost.errors import FULL, RoostError

log = logging.getLogger(__name__)

MAX_CHILDREN = 16        # running jobs one session spawned
MAX_TREE = 64            # running jobs spawned under one root
FINISH_WAIT_S = 10.0


def check_room(registry, parent_id, root_id):
    """Refuse (`full`) a spawn by `parent_id` in the tree of `root_id` that would pass a
    bound. Called where the job is then made, with no wait between."""
    children = tree = 0
    for job in registry.all():
        if not job.run.active:
            continue                # ended (a job being started counts: it is on its way)
        record = job.record
        if record.get("parentSession") == parent_id:
            children += 1
        if record.get("rootSession") == root_id and record.get("parentSession"):
            tree += 1
    if children >= MAX_CHILDREN:
        raise RoostError(FULL, f"this session has {children} spawned jobs running (at most {MAX_CHILDREN}): "
                                 "wait for one to end, or stop one")
    if tree >= MAX_TREE:
        raise RoostError(FULL, f"this spawn tree has {tree} jobs running (at most {MAX_TREE}): "
                                 "wait for some to end, or stop some")


class TreeSweeper:
    """Removes a tree's spawned jobs when its root is removed (a registry on_remove hook)."""

    def __init__(self, registry, runner):
        self.registry = registry
        self.runner = runner

    def removed(self, row):
        if row.get("parentSession"):
            return          # a spawned job of its own tree: its root decides
        spawned = [job for job in self.registry.all() if job.record.get("rootSession") == row["id"]
                   and job.record.get("parentSession")]
        if spawned:
            gevent.spawn(self._sweep, row["id"], spawned)

    def _sweep(self, root_id, spawned):
        log.info("job %s removed: removing the %d jobs spawned in its tree", root_id, len(spawned))
        for job in spawned:
            if self.registry.get(job.id) is not job:
                continue            # removed meanwhile
            try:
                self.runner.stop(job)
                if job.finisher is not None:
                    job.finisher.join(timeout=FINISH_WAIT_S)
                self.registry.remove(job)
            except Exception:
                log.exception("removing job %s of the tree of %s failed", job.id, root_id)
