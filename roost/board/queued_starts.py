"""Task starts that maxLive queued (issue 29, roost.spend.admission): each waits on its
workspace as `startQueued` {at, launch}, and is tried again, in the order they came,
when a session of its provider ends or parks (and at the daemon's start)."""

from roost.errors import RoostError


def start_queued(preparations):
    """The starts maxLive queued, in the order they came: each tried again
    (roost.board.preparing's parts: the board, its locks, stages and admission)."""
    board, admission = preparations.board, preparations.admission
    queued = sorted((task for task in board.tasks
                     if isinstance((task.get("workspace") or {}).get("startQueued"), dict)),
                    key=lambda task: task["workspace"]["startQueued"].get("at") or 0)
    admission.prune("task:", {f"task:{task['id']}" for task in queued})
    for task in queued:
        with preparations.locks.lock(task["id"]):
            workspace = task.get("workspace") or {}
            waiting = workspace.get("startQueued")
            if not isinstance(waiting, dict) or workspace.get("stage") != "working" \
                    or preparations.actions.holder(task) is not None or task["state"] in ("done", "dropped"):
                continue
            if admission.check(waiting["launch"], key=f"task:{task['id']}", task=task["id"]) is not None:
                continue
            workspace.pop("startQueued", None)
            try:
                preparations.launch_session(task, waiting["launch"])
            except RoostError as error:
                preparations.stages.move(task, "working", note=f"its agent could not start: {error.text}")
