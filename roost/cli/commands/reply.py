"""Send a job a reply: typed into a terminal agent and submitted (or delivered to an
agent that speaks the protocol). By default it is typed once the agent waits for
input; with --steer at once. A reply to an ended or reaped job starts it again.

Usage:
  roost reply <id> <text>... [--steer] [--json]
  roost reply --help

Options:
  --steer  type it now, into the work under way
  --json   print the op's result as JSON
"""

from roost.cli.context import ExitStatus


def describe(result):
    if result.get("duplicate"):
        return "already taken (the same request was sent before)"
    if result.get("stopped"):
        return "the job was stopped"
    if result.get("delivered") and result.get("saved"):
        return "delivered to the agent (kept until it acknowledges it)"
    if result.get("delivered"):
        return "typed and submitted"
    if result.get("saved"):
        started = " (the job is starting again)" if result.get("respawned") else ""
        return "queued: it reaches the agent once it waits for input" + started
    return "not submitted"


def main(opts, ctx):
    args = {"id": opts["<id>"], "text": " ".join(opts["<text>"]),
            "mode": "steer" if opts["--steer"] else "followUp"}
    result = ctx.call_once("reply", args)
    ctx.show(opts, result, describe(result))
    if result.get("error"):
        if not opts["--json"]:
            ctx.stderr.write(f"roost reply: {result['error']}\n")
        if not result.get("delivered") and not result.get("saved"):
            return ExitStatus.REFUSED
    return ExitStatus.OK
