"""Send a job a reply: typed into a terminal agent and submitted (or delivered to an
agent that speaks the protocol). By default it is typed once the agent waits for
input; with --steer at once. A reply to an ended or reaped job starts it again.
With --suggested it is the answer the concierge suggested for the job (M45).

Usage:
  roost reply <id> <text>... [--steer] [--json]
  roost reply <id> --suggested [--steer] [--json]
  roost reply --help

Options:
  --steer      type it now, into the work under way
  --suggested  send the concierge's suggestion for this job (its row's `suggested`)
  --json       print the op's result as JSON
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


def suggestion(ctx, query):
    """The text the concierge suggested for the job `query` names; None when it has none."""
    job_id = ctx.call("resolve", {"query": query})["id"]
    row = next((row for row in ctx.call("list", {"all": True})["jobs"] if row["id"] == job_id), None)
    suggested = (row or {}).get("suggested")
    return (job_id, suggested["text"]) if suggested else (job_id, None)


def main(opts, ctx):
    job_id, text = opts["<id>"], " ".join(opts["<text>"])
    if opts["--suggested"]:
        job_id, text = suggestion(ctx, job_id)
        if text is None:
            ctx.stderr.write(f"roost reply: the concierge has suggested no answer for {opts['<id>']}\n")
            return ExitStatus.REFUSED
    args = {"id": job_id, "text": text, "mode": "steer" if opts["--steer"] else "followUp"}
    result = ctx.call_once("reply", args)
    ctx.show(opts, result, describe(result))
    if result.get("error"):
        if not opts["--json"]:
            ctx.stderr.write(f"roost reply: {result['error']}\n")
        if not result.get("delivered") and not result.get("saved"):
            return ExitStatus.REFUSED
    return ExitStatus.OK
