"""What every CLI command shares: the context (environment, output, the daemon), the
exit statuses of CONTRACT.md, and running one command module."""

import enum
import importlib
import json

from roost.client.connection import Lost, Refused, Unreachable, connect, request_once


class ExitStatus(enum.IntEnum):
    OK = 0
    REFUSED = 1
    USAGE = 2
    UNREACHABLE = 3


class Context:
    def __init__(self, env, socket_override, stdout, stderr):
        self.env = env
        self.socket = socket_override
        self.stdout = stdout
        self.stderr = stderr

    def client(self, autostart=True):
        return connect(self.env, self.socket, autostart=autostart)

    def call(self, op, args=None):
        """One request on a connection of its own."""
        client = self.client()
        try:
            return client.call(op, args or {})
        except Lost as error:
            raise Unreachable(f"the daemon closed the connection during {op}: {error}")
        finally:
            client.close()

    def call_once(self, op, args):
        """A request that must be taken once however often it is sent (M36)."""
        return request_once(self.env, self.socket, op, args)

    def say(self, text):
        self.stdout.write(text if text.endswith("\n") else text + "\n")

    def show(self, opts, result, text):
        """--json prints exactly the op's result; otherwise the readable text."""
        if opts.get("--json"):
            self.say(json.dumps(result, ensure_ascii=False, indent=2))
        elif text:
            self.say(text)


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
        context.stderr.write(f"roost: {refusal.code}: {refusal.text}\n")
        return ExitStatus.REFUSED
    except Unreachable as error:
        context.stderr.write(f"roost: {error}\n")
        return ExitStatus.UNREACHABLE
    except UnicodeEncodeError:
        # A word of the command line that is not UTF-8 text (a file name's raw bytes):
        # the protocol carries text only.
        context.stderr.write(f"roost {command}: an argument is not UTF-8 text, so it cannot be sent\n")
        return ExitStatus.USAGE
    except KeyboardInterrupt:
        context.stderr.write("roost: interrupted\n")
        return 130
