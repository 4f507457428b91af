"""Start an ended job again (with its profile's resume command when it has one).
All of them with --all: every job that ended without finishing (stopped, reaped or
failed). With --restart: running ones too, and one held back for dying at each start.

Usage:
  roost respawn <id> [--restart] [--prompt=TEXT] [--json]
  roost respawn --all [--restart] [--json]
  roost respawn --help

Options:
  --all          every job that ended without finishing
  --restart      stop and start a running job too
  --prompt=TEXT  type TEXT once it waits for input
  --json         print the op's result as JSON
"""

from roost.cli.context import ExitStatus


def main(opts, ctx):
    args = {"restart": bool(opts["--restart"])}
    if opts["--all"]:
        args["all"] = True
    else:
        args["id"] = opts["<id>"]
    if opts["--prompt"]:
        args["prompt"] = opts["--prompt"]
    result = ctx.call("respawn", args)
    lines = [f"{item['id']}: " + ("started" if item["started"] else f"not started: {item.get('error')}")
             for item in result["results"]] or ["nothing to start"]
    ctx.show(opts, result, "\n".join(lines))
    if result["results"] and not any(item["started"] for item in result["results"]):
        return ExitStatus.REFUSED
    return ExitStatus.OK
