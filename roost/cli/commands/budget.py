"""Budgets that stop work (roost.json `budgets`): the jobs parked at one, and `allow`,
which lets a parked job go on: until the day rolls over, or N more than it has spent.
What was sent to it meanwhile is typed (or delivered) then.

Usage:
  roost budget [--json]
  roost budget allow <id> [--usd=N | --tokens=N] [--json]
  roost budget --help

Options:
  --usd=N     let it spend N more US dollars (list price) than it has spent
  --tokens=N  let it spend N more tokens than it has spent
  --json      print the op's result as JSON
"""

import json

from roost.cli.context import ExitStatus


def main(opts, ctx):
    if opts["allow"]:
        args = {"id": opts["<id>"]}
        for unit in ("usd", "tokens"):
            if opts[f"--{unit}"] is not None:
                try:
                    args[unit] = float(opts[f"--{unit}"])
                except ValueError:
                    ctx.stderr.write(f"roost budget: --{unit} takes a number\n")
                    return ExitStatus.USAGE
        result = ctx.call("budget-allow", args)
        allowed = result["allowed"]
        what = "until the day rolls over" if allowed.get("all") else f"{allowed['more']:g} {allowed['unit']} more"
        ctx.show(opts, result, f"{result['id']}: allowed {what}" + ("" if result["wasHeld"] else " (it was not parked)"))
        return ExitStatus.OK
    result = ctx.call("budgets", {})
    lines = [f"budgets: {json.dumps(result['budgets']) if result['budgets'] else 'none set (roost.json budgets)'}"]
    if result.get("over"):
        lines.append(f"over: {result['over']}")
    for held in result["held"]:
        lines.append(f"  {held['id']}  {held['name']}  parked: {held['why']}")
    if not result["held"]:
        lines.append("no job is parked at a budget")
    ctx.show(opts, result, "\n".join(lines))
    return ExitStatus.OK
