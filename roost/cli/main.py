"""The `roost` command line: a lazy table of subcommands (pip's pattern). Each command
module's docstring is its own docopt usage, so `roost --help` imports almost nothing and
`roost ping` imports only what ping needs: never gevent, never dulwich."""

import os
import sys

from roost import __version__

# name -> (module under roost.commands, one-line summary). Listed only when present.
COMMANDS = {
    "status": ("status", "show the daemon's state: pid, version, jobs, damaged files"),
    "ping": ("ping", "check that the daemon answers (starts it when none does)"),
    "daemon": ("daemon", "run the daemon (detached; --foreground keeps it here)"),
    "shutdown": ("shutdown", "stop the daemon (--keep-workers leaves the jobs running)"),
    "agent-file": ("agent_file", "write roost_agent.py, the agent client, into a directory"),
    "run": ("run", "start a job: a command, or an agent from a profile"),
    "profiles": ("profiles", "list the agent profiles: the built-in ones and roost.json's"),
    "doctor": ("doctor", "check roost (home, socket, keeper, version, sinks) and each profile's agent"),
    "hub": ("hub", "the whole fleet on one live screen (also `roost` alone in a terminal)"),
    "list": ("list", "list the jobs"),
    "notify": ("notify", "notifications: `test` sends one to each sink"),
    "attach": ("attach", "join a job's live terminal (detach with Ctrl-q)"),
    "peek": ("peek", "print a job's screen without attaching"),
    "timeline": ("timeline", "a job's flight recorder: its states and why, what was typed, its runs"),
    "explain": ("explain", "why a job's row says what it says now"),
    "reply": ("reply", "send a job a reply (typed, or delivered to a protocol agent)"),
    "keys": ("keys", "press keys in a job's terminal (Down, Enter, C-c: to answer a dialog)"),
    "events": ("events", "what happened across the jobs (-f follows it live)"),
    "task": ("task", "the shared task board: add, list, claim, done, ..."),
    "schedule": ("schedule", "sessions on a clock: add, list, rm, pause, resume, run"),
    "concierge": ("concierge", "the agent that watches the sessions for you: on, off, status, ask, policy"),
    "peers": ("peers", "an agent's: the sessions this job may message"),
    "send": ("send", "an agent's: send another session a message"),
    "watch": ("watch", "an agent's: be told when another session is idle or ended"),
    "spawn": ("spawn", "an agent's: start a child of this job"),
    "mcp": ("mcp", "an agent's: the MCP server of roost's tools (peers, send, watch, the board)"),
    "stop": ("stop", "stop a job and every process it started"),
    "rm": ("rm", "remove an ended job and its directory"),
    "respawn": ("respawn", "start an ended job again"),
    "pin": ("pin", "pin a job (listed first, never reaped)"),
    "limits": ("limits", "the jobs parked at their usage limit, and their resume at the reset (off, on)"),
    "statusline": ("statusline", "an agent's: Claude Code's status line in a job (records its plan windows, shows yours)"),
    "budget": ("budget", "budgets that stop work: the jobs parked at one, and allow (lets one go on)"),
    "usage": ("usage", "what the fleet spent: tokens and USD by job, task, project, provider, model, day, host"),
    "rename": ("rename", "rename a job"),
    "proxy": ("proxy", "bridge stdin/stdout to this machine's daemon (what --host runs over ssh)"),
    "service": ("service", "start roost at login: install or remove a systemd --user unit"),
    "completion": ("completion", "print the shell completion script (bash, zsh, fish)"),
    "help": ("help", "roost's manual, by topic: `roost help TOPIC` shows one"),
}

USAGE = """roost: run many coding agents on one machine, and keep them.

Usage:
  roost [--socket=PATH | --host=HOST...] <command> [<args>...]
  roost -h | --help
  roost --version

Options:
  --socket=PATH  talk to the daemon on this socket (default: $ROOST_SOCKET,
                 else $ROOST_HOME/roost.sock)
  --host=HOST    run the command against HOST's daemon, through `ssh HOST roost
                 proxy` (default: $ROOST_HOST; `local` is this machine);
                 the hub takes several
  -h --help      show this help
  --version      show roost's version (and a build's commit and glibc floor)

Commands:
{commands}
Run `roost <command> --help` for a command's own options, `roost help` for the
manual's topics. Every command that shows something takes --json. Exit status: 0 done,
1 refused by the daemon, 2 bad usage, 3 no daemon could be reached or started.
"""


def _available():
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "commands")
    frozen = getattr(sys, "frozen", False)
    for name, (module, summary) in COMMANDS.items():
        # Frozen builds hold modules in an archive, not files: list them all there.
        if frozen or os.path.exists(os.path.join(here, module + ".py")):
            yield name, module, summary


def usage_text():
    rows = "".join(f"  {name:<12} {summary}\n" for name, _, summary in _available())
    return USAGE.format(commands=rows)


def _completion_request(argv):
    """(the --socket given or None, the words) of `roost [--socket=PATH] __complete WORD...`."""
    args = list(argv)
    socket_override = None
    while args and args[0].startswith("--socket"):
        flag = args.pop(0)
        if "=" in flag:
            socket_override = flag.split("=", 1)[1]
        elif args:
            socket_override = args.pop(0)
    if args and args[0] == "__complete":
        return socket_override, args[1:]
    return None


def _in_a_terminal(stdout):
    try:
        return stdout.isatty() and os.isatty(0)
    except (AttributeError, ValueError):
        return False


def _host_of_environment(env):
    """ROOST_HOST, outside a job: a job's own commands always go to the daemon that runs
    it (ROOST_SOCKET), whatever the environment it inherited."""
    host = env.get("ROOST_HOST")
    if host and not (env.get("ROOST_JOB_ID") or env.get("PI_JOB_ID")):
        return [host]
    return []


def main(argv, env=None, stdout=None, stderr=None):
    """Run one command; returns the exit status (never calls sys.exit)."""
    env = os.environ if env is None else env
    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    completion = _completion_request(argv)
    if completion is not None:      # a Tab: before anything else is imported
        from roost.cli import completing

        return completing.main(completion[1], env, stdout, completion[0])
    from roost.cli.context import Context, ExitStatus, run_command

    socket_override = None
    hosts = []
    args = list(argv)
    # Global options come before the command (docopt's options_first, by hand: cheaper).
    while args and args[0].startswith("-"):
        flag = args.pop(0)
        if flag in ("-h", "--help"):
            stdout.write(usage_text())
            return ExitStatus.OK
        if flag == "--version":
            from roost.bundle.files import version_text

            stdout.write(version_text(__version__) + "\n")
            return ExitStatus.OK
        if flag.startswith("--socket="):
            socket_override = flag.split("=", 1)[1]
        elif flag == "--socket" and args:
            socket_override = args.pop(0)
        elif flag.startswith("--host="):
            hosts.append(flag.split("=", 1)[1])
        elif flag == "--host" and args:
            hosts.append(args.pop(0))
        else:
            stderr.write(f"roost: unknown option {flag}\n\n{usage_text()}")
            return ExitStatus.USAGE
    if not args:
        if not _in_a_terminal(stdout):
            stderr.write(usage_text())
            return ExitStatus.USAGE
        args = ["hub"]
    name = args.pop(0)
    entry = dict((n, m) for n, m, _ in _available()).get(name)
    if entry is None:
        stderr.write(f"roost: no command {name!r}; `roost --help` lists them\n")
        return ExitStatus.USAGE
    if not hosts and name != "proxy":      # the proxy serves its own machine, whatever the environment
        hosts = _host_of_environment(env)
    if hosts and socket_override:
        stderr.write("roost: --socket and --host name two different daemons: give one\n")
        return ExitStatus.USAGE
    if len(hosts) > 1 and name not in ("hub", "usage"):
        stderr.write(f"roost {name}: it runs against one daemon; several --host are for the hub and usage\n")
        return ExitStatus.USAGE
    context = Context(env, socket_override, stdout, stderr, hosts)
    return run_command(entry, name, args, context)
