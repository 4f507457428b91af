"""The schedule ops (M39, M40): schedules, schedule-add, schedule-rm, schedule-pause and
schedule-run, a person's only (roost.ops.callers). The book keeps them
(`call.services.schedules`), the timer runs them (`call.services.scheduler`); every
answer comes after schedules.json is written."""

from roost.contract import Flag, ListOf, Text
from roost.errors import BUSY, FULL, NOT_FOUND, TOO_LONG, UNSUPPORTED
from roost.jobs.launch_args import DISPATCH_ARGS
from roost.ops import op
from roost.ops.jobs import FINDS, STARTS
from roost.ops.shapes import SCHEDULE_ROW
from roost.schedule.book import NAME_LIMIT, TEXT_LIMIT

NAME = Text("A schedule's name.", min_length=1)


@op("schedules", args={}, result={"schedules": ListOf(SCHEDULE_ROW)})
def schedules(call):
    return {"schedules": [schedule.row() for schedule in call.services.schedules.schedules.values()]}


@op("schedule-add", args={
    "name": Text(f"Spaces folded; at most {NAME_LIMIT} characters; not taken.", min_length=1),
    "when": Text("`every 30m`, `daily 18:00`, `weekdays 09:00`, `cron \"...\"`."),
    "launch": DISPATCH_ARGS.but(default=None, doc="A session to start at each run (or `target` and `text`)."),
    "task": Text("The task each run's session is given.", default=None),
    "catchUp": Flag("A run missed while the machine was off runs once when roost is back.", default=False),
    "target": Text("roost's own: a session to tell `text` at each run (its id or name).", default=None),
    "text": Text(f"What to tell `target` (at most {TEXT_LIMIT} characters, longer is refused: `too_long`).",
                 default=None),
}, result=SCHEDULE_ROW, codes=FINDS + (FULL, TOO_LONG, UNSUPPORTED) + STARTS)
def schedule_add(call):
    schedule = call.services.schedules.add(call.args)
    call.services.scheduler.changed()
    return schedule.row()


@op("schedule-rm", args={"name": NAME}, result={"name": Text()}, codes=(NOT_FOUND,))
def schedule_rm(call):
    schedule = call.services.schedules.remove(call.args["name"])
    call.services.scheduler.changed()
    return {"name": schedule.name}


@op("schedule-pause", args={"name": NAME, "paused": Flag("false: resumed from the next slot after now.")},
    result=SCHEDULE_ROW, codes=(NOT_FOUND,))
def schedule_pause(call):
    schedule = call.services.schedules.pause(call.args["name"], call.args["paused"])
    call.services.scheduler.changed()
    return schedule.row()


@op("schedule-run", args={"name": NAME},
    result={"name": Text("The schedule's."), "id": Text("The job its run started.")}, codes=FINDS + (BUSY,) + STARTS)
def schedule_run(call):
    return call.services.scheduler.run_now(call.args["name"])
