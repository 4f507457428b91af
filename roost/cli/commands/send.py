"""Send another session a message: it gets it as from a peer, never as from the user
(its envelope says so). An agent's command: run it inside a roost job (an agent's shell
tool); it acts for that job. TO is a session's id or name (`roost peers`).

Usage:
  roost send <to> <text>... [--json]
  roost send --help

Options:
  --json  print the op's result as JSON
"""

from roost.cli.context import ExitStatus

SAID = {
    "delivered": "delivered to {name}",
    "queued": "queued for {name}: it reaches it once it waits for input",
    "started": "{name} had ended: it starts again for it",
    "stopped": "{name} was stopped: it gets it when it is started again",
    "not running": "{name} is not running and could not be started: it gets it when it is",
    "duplicate": "not sent again: the same text went to {name} a moment ago",
}


def main(opts, ctx):
    result = ctx.call_as_job("send", {"to": opts["<to>"], "message": " ".join(opts["<text>"])})
    text = SAID.get(result["outcome"], "{name}: " + result["outcome"]).format(name=result["name"])
    if result.get("dialog"):
        text += " (it waits on a dialog first)"
    ctx.show(opts, result, text)
    return ExitStatus.OK
