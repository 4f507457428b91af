"""Be told once when another session is next idle (done, or waiting for an answer) or
has ended: a notice reaches this job as from roost, not from the user. An agent's
command: run it inside a roost job; it acts for that job.

Usage:
  roost watch <id> (idle | ended) [--json]
  roost watch --help

Options:
  --json  print the op's result as JSON
"""


def main(opts, ctx):
    when = "idle" if opts["idle"] else "ended"
    result = ctx.call_as_job("watch", {"id": opts["<id>"], "when": when})
    if result["fired"]:
        text = f"{result['name']} is {when} already: the notice is on its way"
    else:
        text = f"watching {result['name']}: a notice comes once it is {when}"
    ctx.show(opts, result, text)
