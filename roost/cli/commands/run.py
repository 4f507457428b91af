"""Start a job: a command on a pty of its own, or an agent from a profile in roost.json.
With --profile the words are the agent's task; after `--` they are a command that
replaces the profile's. The job gets this environment and runs here unless --cwd says (with --host: the other
machine's environment, and --cwd, else this directory's path, is a directory there).
With --as-me the job is your own shell: its processes may do what you may (dispatch,
reply, keys, approve...), which a job's processes may not otherwise; its row says
`person: true`. A job runs in a jail of its own (docs/security.md), one with --as-me
or --no-sandbox excepted (then its row says `sandboxed: false`).

Usage:
  roost run [--name=NAME] [--cwd=DIR] [--profile=PROFILE] [--as-me] [--no-sandbox] [--restart=WHEN] [--json] [--] <command>...
  roost run --profile=PROFILE [--name=NAME] [--cwd=DIR] [--as-me] [--no-sandbox] [--restart=WHEN] [--json]
  roost run --help

Options:
  --name=NAME        the job's name (default: its command, or the profile's name)
  --cwd=DIR          where it runs (default: the current directory)
  --profile=PROFILE  an agent profile of roost.json ("agentProfiles")
  --as-me            the job is the person's own shell (never an agent's)
  --no-sandbox       run it without a jail: it may write all your files
  --restart=WHEN     `always`: started again with its own argv after the machine
                     restarts (a dev server, a watcher)
  --json             print the op's result as JSON
"""

import os
import shutil

from roost.cli.context import ExitStatus


def adjust_argv(argv):
    """`roost run sh -c "..."`: roost's options end at the command's first word (the -c
    is the command's), as if a `--` stood there. With --profile the words are a task,
    and only an explicit `--` makes them a command."""
    index = 0
    while index < len(argv):
        word = argv[index]
        if word == "--" or word.startswith("--profile"):
            return argv
        if not word.startswith("-") or word == "-":
            return argv[:index] + ["--"] + argv[index:]
        index += 2 if word in ("--name", "--cwd", "--restart") else 1
    return argv

# This terminal's own description: the job runs on a pty of roost's, of its own size.
_THE_TERMINALS_OWN = ("TERM", "TERMCAP", "COLUMNS", "LINES", "TERM_PROGRAM", "TERM_PROGRAM_VERSION")


def main(opts, ctx):
    args = dispatch_args(opts, ctx, "run")
    if args is None:
        return ExitStatus.USAGE
    if opts["--as-me"]:
        args["person"] = True
    if opts["--no-sandbox"]:
        args["sandbox"] = False
    result = ctx.call_once("dispatch", args)
    ctx.show(opts, result, f"started {result['id']} {result['name']}")
    if result.get("notice") and not opts.get("--json"):
        ctx.stderr.write(f"roost run: note: {result['notice']}\n")
    return ExitStatus.OK


def dispatch_args(opts, ctx, command):
    """The DispatchArgs of `roost run` (and `roost spawn`); None, said why, when the
    options cannot make one."""
    from roost.bundle.userenv import is_text, user_environ

    words = list(opts["<command>"] or [])
    cwd = os.path.abspath(opts["--cwd"] or ctx.env.get("PWD") or os.getcwd())
    if ctx.host:
        # On another machine the job gets that machine's environment (its daemon's user's),
        # and the directory is that machine's: its daemon says when there is none.
        environ = {}
    elif not os.path.isdir(cwd):
        ctx.stderr.write(f"roost {command}: {cwd} is not a directory\n")
        return None
    else:
        environ = user_environ(ctx.env)
    for name in _THE_TERMINALS_OWN:
        environ.pop(name, None)
    for name in [name for name, value in environ.items() if not is_text(name) or not is_text(value)]:
        # Bytes that are not UTF-8 (os.environ keeps them as lone surrogates) cannot go
        # over the wire; the job gets the rest of the environment.
        ctx.stderr.write(f"roost {command}: {ascii(name)} is left out of the job's environment: "
                         "its name or value is not UTF-8 text\n")
        del environ[name]
    args = {"kind": "shell", "cwd": cwd, "command": [], "env": environ,
            "name": opts["--name"] or "", "sessionFile": "", "origin": "dispatch"}
    if opts.get("--restart"):      # `roost run`'s (a spawn's child lives with its parent)
        args["restart"] = opts["--restart"]
    profile = opts["--profile"]
    if profile:
        args["profile"] = profile
        if opts["--"]:
            args["command"] = words
        elif words:
            args["task"] = " ".join(words)
    else:
        args["command"] = words
    size = shutil.get_terminal_size((0, 0))
    if size.columns >= 2 and size.lines >= 2:
        args["rows"], args["cols"] = size.lines, size.columns
    return args
