"""Print a job's flight recorder: each change of its row with the rule that decided it,
each text roost typed into it and whether it was submitted, dialogs answered and by
whom, its starts and adoptions (`jobs/<id>/timeline.jsonl`).

Usage:
  roost timeline <id> [--last=N] [--screens] [--json]
  roost timeline --help

Options:
  --last=N   only the last N entries
  --screens  print the screen recorded with each state too
  --json     print the op's result as JSON
"""

import time

from roost.cli.context import ExitStatus


def _clock(ms):
    return time.strftime("%H:%M:%S", time.localtime((ms or 0) / 1000)) + f".{(ms or 0) % 1000:03d}"


def _why(why):
    if not why:
        return ""
    text = why.get("rule") or ""
    if why.get("pattern"):
        text += f" /{why['pattern']}/"
    if why.get("line"):
        text += f" on {why['line']!r}"
    return f"  [{text}]"


def line(entry, screens=False):
    kind = entry.get("kind")
    at = _clock(entry.get("at"))
    if kind == "state":
        said = "/".join(str(entry.get(key)) for key in ("state", "status", "waitingFor"))
        text = f"{at} state {said}{_why(entry.get('why'))}"
        if entry.get("resetsAt"):
            text += f" resets at {_clock(entry['resetsAt'])}"
        if entry.get("held"):
            text += f" held: {entry['held']}"
        if entry.get("answeredBy"):
            text += f" (dialog answered by {entry['answeredBy']})"
        if entry.get("error"):
            text += f" error: {entry['error']}"
        if screens and entry.get("screen"):
            text += "\n" + "\n".join("    | " + row for row in entry["screen"].split("\n"))
        return text
    if kind == "typed":
        done = "submitted" if entry.get("submitted") else f"NOT submitted ({entry.get('error')})"
        into = " into a dialog" if entry.get("into") == "dialog" else ""
        return f"{at} typed{into} from {entry.get('from')}: {entry.get('text')!r}, {done}"
    if kind == "keys":
        return f"{at} keys{' into a dialog' if entry.get('into') else ''}: {' '.join(entry.get('keys') or [])}"
    if kind in ("started", "adopted"):
        return f"{at} {kind}: pid {entry.get('pid')} {' '.join(entry.get('argv') or [])}"
    return f"{at} {kind}"


def main(opts, ctx):
    args = {"id": opts["<id>"]}
    if opts["--last"] is not None:
        try:
            args["limit"] = int(opts["--last"])
        except ValueError:
            args["limit"] = 0
        if args["limit"] < 1:
            ctx.stderr.write("roost timeline: --last takes a positive number\n")
            return ExitStatus.USAGE
    result = ctx.call("timeline", args)
    text = "\n".join(line(entry, opts["--screens"]) for entry in result["entries"]) or "nothing recorded yet"
    ctx.show(opts, result, text)
    return ExitStatus.OK
