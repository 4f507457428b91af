"""Bridge standard input and output to this machine's daemon, byte for byte, until
either side closes: what `roost --host HOST ...` runs on HOST (`ssh HOST roost proxy`).
It starts the daemon when none answers, as any command does, and checks the socket is
the user's own before a byte goes to it. The daemon sees the proxy's process: started
by sshd for the user, outside every job, it is the person. Nothing but the daemon's
bytes is written on standard output.

Usage:
  roost proxy
  roost proxy --help
"""

import os
import sys

from roost.cli.context import ExitStatus
from roost.client.bridge import bridge
from roost.client.connection import connect


def main(opts, ctx):
    if ctx.host:
        ctx.stderr.write("roost proxy: it bridges this machine's daemon; --host makes no sense with it\n")
        return ExitStatus.USAGE
    # Standard output is the wire from here on: a stray print goes to stderr instead.
    sys.stdout = sys.stderr
    client = connect(ctx.env, ctx.socket)
    try:
        ctx.check_daemon_version()
        bridge(0, 1, client.sock)
    finally:
        client.close()
        os.set_blocking(1, True)
    return ExitStatus.OK
