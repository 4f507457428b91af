"""A job's timeline entries (the `timeline` op's) as lines a person reads: the CLI's
`roost timeline` and the hub's timeline view print the same."""

import time

from roost.unix.terminal_waits import describe


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
    if why.get("kernel"):
        text += f"; the kernel: {describe(why['kernel'])}"      # issue 27
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
    if kind == "held":
        screen = (entry.get("why") or {}).get("screen") or {}
        said = "/".join(str(entry.get(key)) for key in ("state", "status", "waitingFor"))
        return (f"{at} held at {said}: the screen read {screen.get('rule')} /{screen.get('pattern')}/ on "
                f"{screen.get('line')!r}, but the kernel: {describe((entry.get('why') or {}).get('kernel'))}")
    if kind == "typed":
        done = "submitted" if entry.get("submitted") else f"NOT submitted ({entry.get('error')})"
        into = " into a dialog" if entry.get("into") == "dialog" else ""
        return f"{at} typed{into} from {entry.get('from')}: {entry.get('text')!r}, {done}"
    if kind == "keys":
        return f"{at} keys{' into a dialog' if entry.get('into') else ''}: {' '.join(entry.get('keys') or [])}"
    if kind in ("started", "adopted"):
        return f"{at} {kind}: pid {entry.get('pid')} {' '.join(entry.get('argv') or [])}"
    if kind == "session":
        return f"{at} session: the agent's own is {entry.get('id')} ({entry.get('file')})"
    return f"{at} {kind}"
