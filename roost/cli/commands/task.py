"""The shared task board: tasks any session may claim and finish, with dependencies
(--after) and projects (the git repository a task is for). Inside a job, claim, done,
release, add and list act for that job (an agent's shell tool); elsewhere they are
yours, as every other action is.

Usage:
  roost task list [--project=DIR] [--json]
  roost task add <title>... [--detail=TEXT] [--after=ID]... [--project=DIR] [--json]
  roost task claim <id> [--json]
  roost task done <id> [--result=TEXT] [--json]
  roost task release <id> [--json]
  roost task drop <id> [--json]
  roost task assign <id> <to> [--json]
  roost task --help

Options:
  --project=DIR  a directory in the project's git repository (list: only its tasks;
                 add: the task is for it; default: for any session)
  --detail=TEXT  what the task is, at length
  --after=ID     a task this one waits on (again for more)
  --result=TEXT  what came of it
  --json         print the op's result as JSON
"""

import os

from roost.cli.context import ExitStatus

# The actions a job's process takes for its job; the others are a person's.
AS_JOB = ("list", "add", "claim", "done", "release")
ACTIONS = ("list", "add", "claim", "done", "release", "drop", "assign")


def table(tasks):
    if not tasks:
        return "the board is empty"
    lines = [f"  {'ID':>4}  {'STATE':<8}  {'HOLDER':<20}  TITLE"]
    for task in tasks:
        holder = (task.get("owner") or {}).get("name") or ""
        state = (task.get("workspace") or {}).get("stage") or task["state"]
        after = f"  (after {', '.join('#' + str(other) for other in task['after'])})" if task.get("after") else ""
        lines.append(f"  {'#' + str(task['id']):>4}  {state:<8}  {holder[:20]:<20}  {task['title']}{after}")
    return "\n".join(lines)


def args_of(action, opts):
    args = {"action": action}
    if opts["<id>"] is not None:
        args["id"] = opts["<id>"]
    if action == "list" and opts["--project"]:
        args["project"] = os.path.abspath(opts["--project"])
    if action == "add":
        args["title"] = " ".join(opts["<title>"])
        if opts["--detail"]:
            args["detail"] = opts["--detail"]
        if opts["--after"]:
            args["after"] = [int(word.lstrip("#")) for word in opts["--after"] if word.lstrip("#").isdigit()]
        if opts["--project"]:
            args["project"] = os.path.abspath(opts["--project"])
    if action == "done" and opts["--result"]:
        args["result"] = opts["--result"]
    if action == "assign":
        args["to"] = opts["<to>"]
    return args


def main(opts, ctx):
    action = next(name for name in ACTIONS if opts[name])
    args = args_of(action, opts)
    if action == "add" and opts["--after"] and len(args.get("after", [])) != len(opts["--after"]):
        ctx.stderr.write("roost task add: --after takes a task's number\n")
        return ExitStatus.USAGE
    if action in AS_JOB and ctx.job_identity() is not None:
        result = ctx.call_as_job("task", args)
    else:
        result = ctx.call("task", args)
    if action == "list":
        text = table(result["tasks"])
    else:
        task = result.get("task") or {}
        text = f"#{task.get('id')} {task.get('title')}: {task.get('state')}"
        if result.get("sent"):
            text += f" (the hand-over: {result['sent']})"
    ctx.show(opts, result, text)
    return ExitStatus.OK
