"""The schedule ops (M39, M40): schedules, schedule-add, schedule-rm, schedule-pause and
schedule-run, a person's only (roost.ops.callers). The book keeps them
(`call.services.schedules`), the timer runs them (`call.services.scheduler`); every
answer comes after schedules.json is written."""

from roost.errors import bad_request
from roost.ops import args as read
from roost.ops import op


@op("schedules")
def schedules(call):
    return {"schedules": [schedule.row() for schedule in call.services.schedules.schedules.values()]}


@op("schedule-add")
def schedule_add(call):
    schedule = call.services.schedules.add(call.args)
    call.services.scheduler.changed()
    return schedule.row()


@op("schedule-rm")
def schedule_rm(call):
    schedule = call.services.schedules.remove(read.text(call.args, "name", min_length=1))
    call.services.scheduler.changed()
    return {"name": schedule.name}


@op("schedule-pause")
def schedule_pause(call):
    paused = read.flag(call.args, "paused", default=None)
    if paused is None:
        raise bad_request("paused is required (true or false)")
    schedule = call.services.schedules.pause(read.text(call.args, "name", min_length=1), paused)
    call.services.scheduler.changed()
    return schedule.row()


@op("schedule-run")
def schedule_run(call):
    return call.services.scheduler.run_now(read.text(call.args, "name", min_length=1))
