"""The hub: the whole fleet on one live screen (the daemon pushes every change). Jobs are
grouped as NEEDS YOU (ranked by what answering unblocks), WORKING, FINISHED and FAILED.
`roost` with no command opens it too when its output is a terminal.

Keys: up/down or j/k move, enter attach (detach comes back), r reply, p peek, s stop,
x rm, R respawn, n rename, P pin, J/K move in the group, / filter, e the event feed,
t the board, ? help, q quit. NO_COLOR=1 (or TERM=dumb) draws it without colours or
glyphs.

Usage:
  roost hub
  roost hub --help
"""

import os

from roost.cli.context import ExitStatus


def main(opts, ctx):
    if not (os.isatty(0) and os.isatty(1)):
        ctx.stderr.write("roost hub: it needs a terminal (`roost list` prints the jobs)\n")
        return ExitStatus.USAGE
    client = ctx.client()
    try:
        from roost.hub.start import run   # curses and the hub load only when the hub runs

        why = run(client, ctx.env)
    finally:
        client.close()
    if why:
        ctx.stderr.write(f"roost hub: {why}\n")
        return ExitStatus.UNREACHABLE
    return ExitStatus.OK
