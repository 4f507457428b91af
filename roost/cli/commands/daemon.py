"""Run the daemon. Detached by default (it answers before this command returns); the
option --foreground keeps it in this terminal with its log on stderr.

Usage:
  roost daemon [--foreground]
  roost daemon --help
"""


def main(opts, ctx):
    from roost.daemon.main import serve

    if opts["--foreground"]:
        return serve(foreground=True)
    from roost import paths
    from roost.client.connection import Client

    path = paths.socket_path(ctx.env, ctx.socket)
    try:
        Client.connect(path, timeout=2).close()
        ctx.say(f"a daemon already answers on {path}")
        return 0
    except OSError:
        pass
    ctx.client().close()   # starts it detached and waits until it answers
    ctx.say(f"daemon started on {path}")
    return 0
