"""The shared task board: tasks any session may claim and finish, with dependencies
(--after) and projects (the git repository a task is for); and a task's own worktree:
prepare it, start a session in it, review its diff, comment, send it back, merge it
(alone, or several in a train), or push it as a pull request. Inside a job, claim, done,
release, add, list, diff, claim-paths and release-paths act for that job (an agent's
shell tool); elsewhere they are yours, as every other action is.

Usage:
  roost task list [--project=DIR] [--json]
  roost task add <title>... [--detail=TEXT] [--after=ID]... [--project=DIR] [--paths=GLOBS] [--json]
  roost task claim <id> [--json]
  roost task done <id> [--result=TEXT] [--json]
  roost task release <id> [--json]
  roost task drop <id> [--json]
  roost task assign <id> <to> [--json]
  roost task prepare <id> [--json]
  roost task start <id> [--profile=PROFILE] [--name=NAME] [--cwd=DIR] [--json] [--] [<command>...]
  roost task diff <id> [--json]
  roost task comment <id> <file> <line> <text>... [--json]
  roost task uncomment <id> <index> [--json]
  roost task back <id> [--note=TEXT] [--json]
  roost task commit <id> [--message=TEXT] [--json]
  roost task merge <id> [--no-ff] [--json]
  roost task merge --train <ids>... [--no-ff] [--dry] [--json]
  roost task claim-paths <id> <globs>... [--json]
  roost task release-paths <id> [--json]
  roost task abort <id> [--json]
  roost task approve <id> [--dry | --hash=HASH] [--json]
  roost task verify <id> [--json]
  roost task pass <id> [--json]
  roost task shelve <id> [--json]
  roost task pr <id> [--dry] [--json]
  roost task cleanup [--dry] [--json]
  roost task --help

Options:
  --project=DIR      a directory in the project's git repository (list: only its tasks;
                     add: the task is for it; default: for any session)
  --detail=TEXT      what the task is, at length
  --after=ID         a task this one waits on (again for more)
  --paths=GLOBS      add: where the task will work, globs relative to the repository,
                     comma-separated (`src/board/**,README.md`); another task's edits
                     there are an overlap from the start
  --result=TEXT      what came of it
  --profile=PROFILE  start: an agent profile of roost.json (the words are its task;
                     after `--` they are a command instead)
  --name=NAME        start: the session's name
  --cwd=DIR          start: where in the worktree it runs (relative to its top)
  --note=TEXT        back: what to do next (sent with the review comments)
  --message=TEXT     commit: the commit message
  --no-ff            merge: always a merge commit on base
  --train            merge: land these tasks one at a time, each synced and verified
                     again on the base the ones before left; the first that conflicts
                     or fails stops the train and goes back to its holder; the
                     branches git predicts to conflict go last, and it says so first
  --dry              approve, pr: show what would run; cleanup: list, remove nothing;
                     merge --train: the order and why, nothing landed
  --hash=HASH        approve: exactly the commands --dry showed with this hash
  --json             print the op's result as JSON

prepare makes the worktree (roost's own directory, branch roost/t<id>-...) and holds it
five minutes; start prepares it when needed and starts the session there. approve and pr
show what they will do, then do exactly that (pinned to the commands' hash, to the
branch's tip). approve --dry shows the repository's commands with every control
character made visible, and their hash; approve --hash approves only that hash; plain
approve shows them and asks, in a terminal only (elsewhere: --dry, then --hash).
"""

import os

import sys

from roost.cli import board_text
from roost.cli.context import ExitStatus
from roost.controls import visible

# The actions a job's process takes for its job; the others are a person's.
AS_JOB = ("list", "add", "claim", "done", "release", "claim-paths", "release-paths", "diff")
ACTIONS = ("list", "add", "claim", "done", "release", "drop", "assign", "prepare", "start", "diff", "comment",
           "uncomment", "back", "commit", "merge", "abort", "approve", "verify", "pass", "shelve", "pr", "cleanup",
           "claim-paths", "release-paths")


def adjust_argv(argv):
    """`roost task start 4 sh -c "..."`: start's options end at the command's first word."""
    if argv[:1] != ["start"] or "--" in argv:
        return argv
    index = 2
    while index < len(argv):
        word = argv[index]
        if word.startswith("--profile"):
            return argv
        if not word.startswith("-") or word == "-":
            return argv[:index] + ["--"] + argv[index:]
        index += 2 if word in ("--name", "--cwd") else 1
    return argv


def _task_id(word):
    word = (word or "").lstrip("#")
    return int(word) if word.isdigit() else None


def args_of(action, opts):
    args = {"action": action}
    if opts["<id>"] is not None:
        args["id"] = _task_id(opts["<id>"]) or opts["<id>"]
    if action in ("list", "add") and opts["--project"]:
        args["project"] = os.path.abspath(opts["--project"])
    if action == "add":
        args["title"] = " ".join(opts["<title>"])
        if opts["--detail"]:
            args["detail"] = opts["--detail"]
        if opts["--after"]:
            args["after"] = [_task_id(word) for word in opts["--after"] if _task_id(word)]
    if action == "add" and opts["--paths"]:
        args["paths"] = [glob.strip() for glob in opts["--paths"].split(",") if glob.strip()]
    if action == "claim-paths":
        args["paths"] = [glob.strip() for word in opts["<globs>"] for glob in word.split(",") if glob.strip()]
    if action == "done" and opts["--result"]:
        args["result"] = opts["--result"]
    if action == "assign":
        args["to"] = opts["<to>"]
    if action == "comment":
        args["comment"] = {"file": opts["<file>"], "line": int(opts["<line>"]) if opts["<line>"].isdigit() else -1,
                           "text": " ".join(opts["<text>"])}
    if action == "uncomment":
        args["index"] = int(opts["<index>"]) if opts["<index>"].isdigit() else -1
    if action == "back" and opts["--note"]:
        args["note"] = opts["--note"]
    if action == "commit" and opts["--message"]:
        args["message"] = opts["--message"]
    if action == "merge":
        args["mode"] = "no-ff" if opts["--no-ff"] else "ff"
        if opts["--train"]:
            args["train"] = [_task_id(word) for word in opts["<ids>"]]
            if opts["--dry"]:
                args["dry"] = True
    if action in ("approve", "pr", "cleanup") and opts["--dry"]:
        args["dry"] = True
    if action == "approve" and opts["--hash"]:
        args["hash"] = opts["--hash"]
    return args


def _usage_problem(action, opts, args):
    if action == "add" and opts["--after"] and len(args.get("after", [])) != len(opts["--after"]):
        return "--after takes a task's number"
    if action == "merge" and opts["--train"] and None in args["train"]:
        return "--train takes tasks' numbers"
    if action == "comment" and args["comment"]["line"] < 0:
        return "a comment's line is a number"
    if action == "uncomment" and args["index"] < 0:
        return "uncomment takes the comment's number (from 0, as `roost task list --json` shows them)"
    return None


def main(opts, ctx):
    action = next(name for name in ACTIONS if opts[name])
    args = args_of(action, opts)
    problem = _usage_problem(action, opts, args)
    if problem:
        ctx.stderr.write(f"roost task {action}: {problem}\n")
        return ExitStatus.USAGE
    if action == "start":
        return _start(opts, ctx, args)
    if action == "approve":
        return _approve(opts, ctx, args)
    if action == "pr" and not opts["--dry"]:
        return _shown_then_done(opts, ctx, args)
    said = []
    if action == "merge" and opts["--train"] and not opts["--dry"] and not opts["--json"]:
        # the order and why, said before the train starts
        said = (ctx.call("task", dict(args, dry=True)).get("note") or "").splitlines()
        ctx.say("\n".join(said))
    if action in AS_JOB and ctx.job_identity() is not None:
        result = ctx.call_as_job("task", args)
    else:
        result = ctx.call("task", args)
    if action == "list":
        text = board_text.table(result["tasks"])
    elif action == "diff":
        text = board_text.diff(result)
    elif action == "cleanup" or action == "merge" and opts["--train"]:
        # the train's lines, without the plan already said (unless its order changed)
        lines = (result.get("note") or "").splitlines()
        text = "\n".join(lines[len(said):] if lines[:len(said)] == said else lines)
    else:
        text = board_text.one(result)
    ctx.show(opts, result, text)
    return ExitStatus.OK


def _shown_then_done(opts, ctx, args):
    """approve and pr: what the dry run shows is what is done (its hash pins it)."""
    shown = ctx.call("task", dict(args, dry=True))
    if not opts["--json"]:
        ctx.say(shown.get("note") or "")
    result = ctx.call("task", dict(args, hash=shown["hash"]))
    ctx.show(opts, result, board_text.one(result))
    return ExitStatus.OK


def _approve(opts, ctx, args, stdin=None):
    """approve: --dry shows, --hash approves what was shown; plain, a person at a
    terminal is shown the commands and asked. Nothing is approved unseen."""
    stdin = stdin or sys.stdin
    if opts["--dry"] or opts["--hash"]:
        result = ctx.call("task", args)
        text = visible(result.get("note") or "", keep="\n")
        if opts["--dry"]:
            text += (f"\nhash: {result['hash']}\napprove exactly these with: "
                     f"roost task approve {args['id']} --hash {result['hash']}")
        ctx.show(opts, result, text)
        return ExitStatus.OK
    ctx.refuse_the_persons_op("task", args)     # inside a job: it is the person's, before any asking
    if not _is_terminal(stdin):
        ctx.stderr.write(f"roost task approve: not asked at a terminal, so nothing is approved: look at the "
                         f"commands with `roost task approve {args['id']} --dry`, then approve exactly them "
                         f"with `roost task approve {args['id']} --hash HASH`\n")
        return ExitStatus.USAGE
    shown = ctx.call("task", dict(args, dry=True))
    ctx.stderr.write(visible(shown.get("note") or "", keep="\n") + f"\nhash: {shown['hash']}\nApprove these commands? [y/N] ")
    ctx.stderr.flush()
    if stdin.readline().strip().lower() not in ("y", "yes"):
        ctx.stderr.write("not approved\n")
        return ExitStatus.REFUSED
    result = ctx.call("task", dict(args, hash=shown["hash"]))
    ctx.show(opts, result, visible(board_text.one(result), keep="\n"))
    return ExitStatus.OK


def _is_terminal(stream):
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _start(opts, ctx, args):
    """Prepare the worktree when it is not held yet, then start the session in it."""
    from roost.cli.commands.run import dispatch_args

    listed = ctx.call("task", {"action": "list"})["tasks"]
    task = next((task for task in listed if task["id"] == args.get("id")), None)
    held = (task or {}).get("prepared")
    if held and os.path.isdir(held.get("path") or ""):
        top = held["path"]
    else:
        top = ctx.call("task", {"action": "prepare", "id": args["id"]})["workspace"]["path"]
    cwd = os.path.normpath(os.path.join(top, opts["--cwd"] or "."))
    launch = dispatch_args({"<command>": opts["<command>"], "--cwd": cwd, "--name": opts["--name"],
                            "--profile": opts["--profile"], "--": opts["--"]}, ctx, "task start")
    if launch is None:
        return ExitStatus.USAGE
    if not launch["command"] and not launch.get("profile"):
        ctx.stderr.write("roost task start: give a command (after --) or a --profile\n")
        return ExitStatus.USAGE
    result = ctx.call("task", dict(args, launch=launch))
    text = board_text.one(result)
    if not result.get("job"):
        waits = ((result.get("task") or {}).get("workspace") or {}).get("startAfterLimit")
        text += ("\nthe session starts after the usage limit's reset (see the note)" if waits
                 else "\nthe repository's setup runs first; the session follows")
    ctx.show(opts, result, text)
    return ExitStatus.OK
