"""The `roost` command line: a lazy table of subcommands (pip's pattern). Each command
module's docstring is its own docopt usage, so `roost --help` imports almost nothing and
`roost ping` imports only what ping needs: never gevent, never dulwich."""

import os
import sys

from roost import __version__, job_identity
from roost.cli.commands import COMMANDS

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
    if host and not job_identity.job_id(env):
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
