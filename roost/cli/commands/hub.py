"""The hub: the whole fleet on one live screen (the daemon pushes every change). Jobs are
grouped as NEEDS YOU (ranked by what answering unblocks), WORKING, FINISHED and FAILED.
`roost` with no command opens it too when its output is a terminal.

Keys: up/down or j/k move, enter attach (detach comes back), r reply, p peek, s stop,
x rm, R respawn, n rename, P pin, J/K move in the group, / filter, e the event feed,
t the board, ? help, q quit. NO_COLOR=1 (or TERM=dumb) draws it without colours or
glyphs.

Other machines: `roost hub --host A --host B` (or `roost --host A --host B hub`, or
roost.json's `hosts`; `local` is this machine) shows their jobs in one view, each row marked with its host; a key on
a row goes to its host. A machine that drops is shown as down and tried again (backoff
to a minute). The board shown is the first machine's.

Usage:
  roost hub [--host=HOST...]
  roost hub --help

Options:
  --host=HOST  a machine to show (several may be given; `local` is this one)
"""

import os
import tempfile

from roost.cli.context import ExitStatus
from roost.client import hosts
from roost.client.connection import connect

SSH_TIMEOUT_S = 15     # a host that does not answer holds the screen no longer than this


def links_of(ctx, named=()):
    """One Link per machine: this one's alone, or each named one's (ssh's own messages
    kept off the screen, in a file the link reads its why from)."""
    from roost.hub.links import Link

    names = [hosts.check_host(name) if name != hosts.LOCAL else name for name in list(ctx.hosts) + list(named)]
    names = list(dict.fromkeys(names)) or hosts.hosts_of(hosts.settings(ctx.env))
    if not names:
        return [Link(hosts.LOCAL, None, tagged=False, client=ctx.client())]

    def local():
        client = connect(ctx.env, ctx.socket)
        client.guard = ctx.refuse_the_persons_op
        return client

    def remote(host):
        said = tempfile.TemporaryFile()
        client = ctx.host_client(host, stderr=said, timeout=SSH_TIMEOUT_S, own_session=True)
        client.said = said
        return client

    return [Link(name, local if name == hosts.LOCAL else (lambda name=name: remote(name)), tagged=True)
            for name in names]


def main(opts, ctx):
    if not (os.isatty(0) and os.isatty(1)):
        ctx.stderr.write("roost hub: it needs a terminal (`roost list` prints the jobs)\n")
        return ExitStatus.USAGE
    try:
        links = links_of(ctx, opts.get("--host") or ())
    except hosts.BadSetting as error:
        ctx.stderr.write(f"roost hub: {error}\n")
        return ExitStatus.USAGE
    try:
        from roost.hub.start import run   # curses and the hub load only when the hub runs

        why = run(links, ctx.env)
    finally:
        for link in links:
            link.close()
    if why:
        ctx.stderr.write(f"roost hub: {why}\n")
        return ExitStatus.UNREACHABLE
    return ExitStatus.OK
