"""Sessions on a clock: start a command, or an agent from a profile, at the times WHEN
says, in your local time zone (`every 30m`, `every 2h`, `daily 18:00`, `weekdays 09:00`,
`cron "0 9 * * 1-5"`; quote it as one word). With --target, each time types TEXT to a
live session instead (skipped when it is gone or does not wait).

Usage:
  roost schedule add <name> <when> [--profile=PROFILE] [--name=NAME] [--cwd=DIR] [--task=TEXT] [--catch-up] [--json] [--] [<command>...]
  roost schedule add <name> <when> --target=ID --text=TEXT [--json]
  roost schedule list [--json]
  roost schedule rm <name> [--json]
  roost schedule pause <name> [--json]
  roost schedule resume <name> [--json]
  roost schedule run <name> [--json]
  roost schedule --help

Options:
  --profile=PROFILE  each run is an agent of this profile (the words are its task)
  --name=NAME        the name of each run's job (default: the schedule's)
  --cwd=DIR          where each run starts (default: the current directory)
  --task=TEXT        what each run is given to do
  --catch-up         a time missed while roost was down runs once when it starts again
  --target=ID        a live session (its id or name) to tell, instead of starting one
  --text=TEXT        with --target: what to tell it
  --json             print the op's result as JSON

Each run's job says `schedule: NAME` in `roost list --json`; a run is skipped (and
`list` says why) while the last one still goes. pause keeps a schedule without running
it; resume runs it again from its next time.
"""

import time

from roost.cli.commands.run import dispatch_args
from roost.cli.context import ExitStatus


def adjust_argv(argv):
    """`roost schedule add N WHEN sh -c "..."`: the options end at the command's first
    word, as in `roost run`."""
    if argv[:1] != ["add"] or "--" in argv:
        return argv
    index = 3
    while index < len(argv):
        word = argv[index]
        if word.startswith("--profile") or word.startswith("--target"):
            return argv
        if not word.startswith("-") or word == "-":
            return argv[:index] + ["--"] + argv[index:]
        index += 2 if word in ("--name", "--cwd", "--task", "--text") else 1
    return argv


def when_text(words):
    """`cron 0 9 * * 1-5` unquoted is taken as `cron "0 9 * * 1-5"`."""
    words = " ".join(words.split())
    if words.lower().startswith("cron ") and '"' not in words:
        return f'cron "{words[5:]}"'
    return words


def main(opts, ctx):
    name = opts["<name>"]
    if opts["add"]:
        return _add(opts, ctx, name)
    if opts["list"]:
        result = ctx.call("schedules")
        ctx.show(opts, result, "\n".join(_line(row) for row in result["schedules"]) or "no schedules")
    elif opts["rm"]:
        result = ctx.call("schedule-rm", {"name": name})
        ctx.show(opts, result, f"removed {result['name']}")
    elif opts["pause"] or opts["resume"]:
        result = ctx.call("schedule-pause", {"name": name, "paused": bool(opts["pause"])})
        ctx.show(opts, result, _line(result))
    elif opts["run"]:
        result = ctx.call("schedule-run", {"name": name})
        ctx.show(opts, result, f"{result['name']}: ran {result['id']}")
    return ExitStatus.OK


def _add(opts, ctx, name):
    args = {"name": name, "when": when_text(opts["<when>"])}
    if opts["--target"]:
        args.update(target=opts["--target"], text=opts["--text"])
    else:
        launch = dispatch_args(opts, ctx, "schedule add")
        if launch is None:
            return ExitStatus.USAGE
        if not launch.get("profile") and not launch["command"]:
            ctx.stderr.write("roost schedule add: give a command to run, --profile or --target\n")
            return ExitStatus.USAGE
        launch.pop("rows", None)                  # each run gets roost's own size
        launch.pop("cols", None)
        task = opts["--task"] or launch.pop("task", None)
        if task:
            args["task"] = task
        args["launch"] = launch
        args["catchUp"] = bool(opts["--catch-up"])
    result = ctx.call("schedule-add", args)
    ctx.show(opts, result, _line(result))
    return ExitStatus.OK


def _at(ms):
    return time.strftime("%a %Y-%m-%d %H:%M", time.localtime(ms / 1000)) if ms else "-"


def _line(row):
    what = f"tells {row.get('targetName') or row.get('target')}" if row.get("target") else row["agent"]
    state = "paused" if row["paused"] else f"next {_at(row['nextAt'])}"
    line = f"{row['name']}  {row['when']}  {what}  {state}  last {_at(row['lastRunAt'])}"
    if row.get("lastJob"):
        line += f" ({row['lastJob']})"
    if row.get("lastSkip"):
        line += f"  skipped {_at(row['lastSkip']['at'])}: {row['lastSkip']['why']}"
    return line
