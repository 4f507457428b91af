"""A job's screen as rows of text, watched (roost's own, issue 30; a person's only):

    screen {id} -> {id, name, rows, cols, lines: [text], cursor: [row, col], ended}
        then, on this connection, {"event": "screen", "id", "lines": {row: text},
        "cursor", "rows", "cols"} for each change (only the rows that changed, at most
        one frame every roost.term.screen_watch.FRAME_S), and {"event": "screen", "id",
        "ended": true} once the job's terminal is done. A second `screen` of the same job
        on the same connection starts it again (the whole screen in its answer).
    screen-stop {id} -> {id}: the watch ends (a connection that closes ends its watches).

An ended job's screen is answered from its log (`ended: true`) and not watched. Unlike
`attach`, a watch wakes no reaped job, answers none of the job's queries and holds no
draft: it only reads the screen the daemon keeps."""

from roost.contract import Flag, Integer, ListOf, Text
from roost.ops import op
from roost.ops.jobs import FINDS, JOB
from roost.ops.terminal import _live, _screen_from_log
from roost.term.screen_watch import ScreenWatch


SCREEN = {
    "id": Text(), "name": Text(),
    "rows": Integer("The screen's rows (an ended job's: the lines rebuilt from its log)."), "cols": Integer(),
    "lines": ListOf(Text(), "Its rows as text, top first."),
    "cursor": ListOf(Integer(), "[row, col], from 0."),
    "ended": Flag("The job's terminal is done: its screen rebuilt from its log, and not watched."),
}


def _key(job_id):
    # Beside the session's attachments (job id -> attach), released with them.
    return ("screen", job_id)


@op("screen", args={"id": JOB}, result=SCREEN, codes=FINDS)
def screen(call):
    """roost's own (issue 30): a job's screen as rows of text, then only the rows that
    change, pushed on this connection until `screen-stop` or its end."""
    job = call.services.jobs.resolve(call.args["id"])
    session = call.session
    earlier = session.attachments.pop(_key(job.id), None)
    if earlier is not None:
        earlier.release()
    terminal = job.terminal
    if not _live(terminal):
        text = _screen_from_log(call.services.jobs.job_dir(job), None)
        lines = text.split("\n") if text else []
        return {"id": job.id, "name": job.name, "rows": max(len(lines), 1), "cols": 120,
                "lines": lines, "cursor": [0, 0], "ended": True}
    job_id = job.id

    def send(frame):
        if not session.gone:
            session.send_event({"event": "screen", "id": job_id, **frame})

    watch = ScreenWatch(terminal, send)
    first = watch.first()
    session.attachments[_key(job_id)] = watch
    watch.start()
    return {"id": job_id, "name": job.name, **first, "ended": False}


@op("screen-stop", quick=True, args={"id": Text("A job whose screen this connection watches (its id as screen "
                                                  "answered).", min_length=1)},
    result={"id": Text()})
def screen_stop(call):
    """roost's own (issue 30): the watch of a job's screen on this connection ends."""
    job_id = call.args["id"]
    watch = call.session.attachments.pop(_key(job_id), None)
    if watch is not None:
        watch.release()
    return {"id": job_id}
