"""The jobs parked at their usage limit, in groups (one provider, resets close
together): when each group's limit resets, and whether roost resumes each job then
(its profile's limitResume text, typed once a little after the reset). `off` and `on`
turn a job's resume off and back on.

Usage:
  roost limits [--json]
  roost limits off <id> [--json]
  roost limits on <id> [--json]
  roost limits --help

Options:
  --json  print the op's result as JSON
"""

import time

from roost.cli.context import ExitStatus


def main(opts, ctx):
    if opts["off"] or opts["on"]:
        result = ctx.call("limit-resume", {"id": opts["<id>"], "resume": bool(opts["on"])})
        said = "resumed at its limit's reset" if result["resume"] else "not resumed at its limit's reset"
        ctx.show(opts, result, f"{result['id']}: {said}")
        return ExitStatus.OK
    result = ctx.call("limits", {})
    ctx.show(opts, result, _text(result["groups"]))
    return ExitStatus.OK


def _clock(ms):
    return time.strftime("%H:%M", time.localtime(ms / 1000)) if ms else "?"


def _text(groups):
    if not groups:
        return "no job waits at a usage limit"
    lines = []
    for group in groups:
        count = len(group["jobs"])
        lines.append(f"{group['provider']}: resets at {_clock(group['resetsAt'])} "
                     f"({count} job{'' if count == 1 else 's'})")
        for job in group["jobs"]:
            if job["resume"]:
                what = f"types {job['resumeText']!r} at {_clock(job['resumeAt'])}"
            else:
                what = f"not resumed: {job['why']}"
            lines.append(f"  {job['id']}  {job['name']}  resets {_clock(job['resetsAt'])}  {what}")
    return "\n".join(lines)
