"""Join a job's live terminal: you see its screen (repainted on join) and your keys go
to it. Several people may attach to one job at once. Attaching to a job stopped for
idleness starts it again.

Usage:
  roost attach <id> [--detach-key=KEY]
  roost attach --help

Options:
  --detach-key=KEY  the key that detaches, as ^q or C-q (default: roost.json's
                    attach.detachKey, else ^q: Ctrl-q)
"""

import os
import sys

from roost.cli.context import ExitStatus
from roost.client.connection import Lost, Unreachable
from roost.client.terminal import LOST, BadKey, Refusal, attach, parse_key, printable


def main(opts, ctx):
    fd_in = sys.stdin.fileno()
    fd_out = ctx.stdout.fileno() if hasattr(ctx.stdout, "fileno") else sys.stdout.fileno()
    key_text = opts["--detach-key"]
    if key_text is not None:
        try:
            parse_key(key_text)
        except BadKey as error:
            ctx.stderr.write(f"roost attach: {error}\n")
            return ExitStatus.USAGE
    if not os.isatty(fd_in):
        ctx.stderr.write("roost attach: standard input is not a terminal\n")
        return ExitStatus.USAGE
    client = ctx.client()
    try:
        job, why = attach(client, opts["<id>"], fd_in, fd_out, key_text)
    except Lost:
        raise Unreachable("the daemon closed the connection during attach")
    except Refusal as refusal:
        ctx.stderr.write(printable(f"roost: {refusal.code}: {refusal.text}", limit=2000) + "\n")
        return ExitStatus.REFUSED
    finally:
        client.close()
    if why == LOST:
        ctx.stderr.write("roost attach: the daemon closed the connection\n")
        return ExitStatus.UNREACHABLE
    name = printable(job["name"])
    ctx.stderr.write(f"[roost] detached from {name}" + (f": {printable(why)}" if why else "") + "\n")
    return ExitStatus.OK
