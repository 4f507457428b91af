"""What every CLI command shares: the context (environment, output, the daemon), the
exit statuses of CONTRACT.md, and running one command module."""

import enum
import importlib
import json
import os

from roost import __version__, job_identity, paths
from roost.controls import visible
from roost.client.connection import Lost, Refused, Unreachable, connect, request_once
from roost.cli.persons_ops import is_the_persons


class ExitStatus(enum.IntEnum):
    OK = 0
    REFUSED = 1
    USAGE = 2
    UNREACHABLE = 3


def _one_call(client, op, args):
    try:
        return client.call(op, args or {})
    except Lost as error:
        where = " (its ssh said why above, if it could)" if client.process is not None else ""
        raise Unreachable(f"the daemon closed the connection during {op}: {error}{where}")
    finally:
        client.close()


class NotInAJob(Exception):
    """An agent's command run where no job is: it has no session to act for."""


class InsideAJob(Exception):
    """The person's command run inside a job: the daemon would refuse it (issue 16)."""

    def __init__(self, what, job_id):
        super().__init__(what)
        self.what = what
        self.job_id = job_id


class Context:
    def __init__(self, env, socket_override, stdout, stderr, hosts=()):
        self.env = env
        self.socket = socket_override
        self.stdout = stdout
        self.stderr = stderr
        self.version_checked = False
        self.hosts = list(hosts)       # --host (or ROOST_HOST): other machines' daemons
        # `local` names this machine (as in the hub's list): no ssh for it.
        self.host = self.hosts[0] if len(self.hosts) == 1 and self.hosts[0] != "local" else None

    def client(self, autostart=True, check_version=True):
        if self.host:
            client = self.host_client(self.host)
            check_version = False       # the version is in the other machine's lock file
        else:
            client = connect(self.env, self.socket, autostart=autostart)
        client.guard = self.refuse_the_persons_op
        if check_version:
            self.check_daemon_version()
        return client

    def host_client(self, host, stderr=None, timeout=None, own_session=False):
        """HOST's daemon through `ssh HOST roost proxy` (roost.client.hosts)."""
        from roost.client import hosts

        try:
            client = hosts.open_host(host, self.env, timeout=timeout, stderr=stderr, own_session=own_session)
        except hosts.BadSetting as error:
            raise Unreachable(str(error))
        client.guard = self.refuse_the_persons_op
        return client

    def refuse_the_persons_op(self, op, args):
        """Inside a job (not the person's own shell), the person's ops are refused here,
        before they are sent: the daemon would refuse them anyway, from the peer's pid."""
        job_id = job_identity.job_id(self.env)
        if job_id and not job_identity.is_persons_shell(self.env) and is_the_persons(op, args):
            action = args.get("action")
            raise InsideAJob(f"{op} {action}" if op == "task" and isinstance(action, str) else op, job_id)

    def check_daemon_version(self):
        """Once per command, after the daemon answered: say so when it runs another
        version than this CLI (roost was installed over a running daemon)."""
        if self.version_checked:
            return
        self.version_checked = True
        notice = daemon_version_notice(daemon_version(paths.socket_path(self.env, self.socket)), __version__)
        if notice:
            self.stderr.write(notice)

    def call(self, op, args=None):
        """One request on a connection of its own."""
        return _one_call(self.client(), op, args)

    def job_identity(self):
        """(job id, token) of the job this command runs in (its environment says so,
        under the new names or the older ones), or None outside a job."""
        return job_identity.job_identity(self.env)

    def as_job(self):
        """A connection that speaks for the job this command runs in (`speak_for`): an
        agent's commands (peers, send, watch, spawn) act for it. NotInAJob outside one."""
        identity = self.job_identity()
        if identity is None:
            raise NotInAJob()
        client = self.client()
        try:
            client.call("speak_for", {"id": identity[0], "token": identity[1]})
        except BaseException:
            client.close()
            raise
        client.guard = None     # it speaks for its job now: what it may do is the job's
        return client

    def call_as_job(self, op, args=None):
        """One request for the job this command runs in, on a connection of its own."""
        return _one_call(self.as_job(), op, args)

    def call_once(self, op, args):
        """A request that must be taken once however often it is sent (M36)."""
        self.refuse_the_persons_op(op, args)
        opener = (lambda: self.host_client(self.host)) if self.host else None
        result = request_once(self.env, self.socket, op, args, opener)
        self.check_daemon_version()
        return result

    def say(self, text):
        """Text for the person's terminal, with what agents wrote in it (names, summaries,
        questions, events): its control characters shown (`\\x1b`), never acted on."""
        self.say_as_is(visible(text, keep="\n"))

    def say_as_is(self, text):
        """Text that is safe as it is: JSON (which escapes control characters), a screen's
        rendered text."""
        self.stdout.write(text if text.endswith("\n") else text + "\n")

    def show(self, opts, result, text):
        """--json prints exactly the op's result; otherwise the readable text."""
        if opts.get("--json"):
            self.say_as_is(json.dumps(result, ensure_ascii=False, indent=2))
        elif text:
            self.say(text)


def daemon_version(socket_path):
    """The version of the daemon serving `socket_path`, read from its lock file beside
    the socket (one small read: no request, no round trip). "" for a daemon of a roost
    that did not record it; None when there is no lock file to read (a relay, a home
    too deep for its socket)."""
    try:
        with open(os.path.join(os.path.dirname(socket_path), "daemon.lock"), "rb") as handle:
            lines = handle.read(256).decode("utf-8", "replace").splitlines()
    except OSError:
        return None
    if not lines or not lines[0].strip().isdigit():
        return None
    if len(lines) > 1 and lines[1].startswith("roost "):
        return lines[1][len("roost "):].strip()
    return ""


def _version_order(version):
    """"0.1.0" > "0.1.0.dev0" > "0.0.9": the numbers first, then a release before its
    pre-releases."""
    parts = version.split(".")
    numbers = []
    for part in parts:
        if not part.isdigit():
            break
        numbers.append(int(part))
    return numbers, len(numbers) == len(parts)


def daemon_version_notice(theirs, ours):
    """What to tell the user when the daemon's version is not this CLI's, or None."""
    if theirs is None or theirs == ours:
        return None
    if theirs and _version_order(theirs) > _version_order(ours):
        return (f"roost: the daemon runs roost {theirs}, newer than this roost {ours}: "
                f"is an older roost first on your PATH?\n")
    running = f"roost {theirs}" if theirs else "an older roost"
    return (f"roost: the daemon runs {running}, older than this roost {ours}; its jobs run on. "
            f"To move them to {ours}: `roost shutdown --keep-workers`, and the next roost command "
            f"starts the new daemon, which adopts them.\n")


def run_command(module_name, command, argv, context):
    from docopt import DocoptExit, docopt

    module = importlib.import_module(f"roost.cli.commands.{module_name}")
    try:
        if hasattr(module, "adjust_argv"):
            argv = module.adjust_argv(argv)
        opts = docopt(module.__doc__, argv=[command] + argv, default_help=False)
    except DocoptExit:
        context.stderr.write(f"roost {command}: these arguments do not fit its usage\n\n")
        context.stderr.write(module.__doc__.strip() + "\n")
        return ExitStatus.USAGE
    if opts.get("--help"):
        context.stdout.write(module.__doc__.strip() + "\n")
        return ExitStatus.OK
    try:
        return module.main(opts, context) or ExitStatus.OK
    except Refused as refusal:
        context.stderr.write(visible(f"roost: {refusal.code}: {refusal.text}") + "\n")
        return ExitStatus.REFUSED
    except Unreachable as error:
        context.stderr.write(f"roost: {error}\n")
        return ExitStatus.UNREACHABLE
    except NotInAJob:
        context.stderr.write(f"roost {command} is an agent's command: it acts for the roost job it runs in "
                             "(ROOST_JOB_ID and ROOST_JOB_TOKEN say which), and this is no job's process. "
                             "Run it from inside a job (an agent's shell tool); to answer a job yourself, "
                             "use `roost reply`.\n")
        return ExitStatus.USAGE
    except InsideAJob as inside:
        context.stderr.write(f"roost {command}: {inside.what} is the person's, and this runs inside roost job "
                             f"{inside.job_id} (ROOST_JOB_ID says so): a job's processes are never the person, "
                             "so roost does not send it. Run it from a terminal of your own, or start your "
                             "shell under roost with `roost run --as-me`.\n")
        return ExitStatus.REFUSED
    except UnicodeEncodeError:
        # A word of the command line that is not UTF-8 text (a file name's raw bytes):
        # the protocol carries text only.
        context.stderr.write(f"roost {command}: an argument is not UTF-8 text, so it cannot be sent\n")
        return ExitStatus.USAGE
    except KeyboardInterrupt:
        context.stderr.write("roost: interrupted\n")
        return 130
