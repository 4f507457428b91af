"""Check roost itself and each agent profile's agent. roost: its home and socket
private to you (0700, 0600), the keeper running, the daemon's version against this
CLI's, and each notification sink (notify-send and a session bus, the command sink's
program). Each agent: is it on PATH (this shell's, which `roost run` gives the job),
which version is installed, and was the profile's screen reading checked on that
version? Says what else to know: a profile of roost.json that replaces a built-in
one, a bundled file missing, a term that is refused.

With --screens, instead: every screen the jobs' timelines recorded is judged again by
its profile as it is now, and each state that would read otherwise is listed.

Usage:
  roost doctor [--screens] [--json]
  roost doctor --help

Options:
  --screens  replay the recorded screens through the current profiles
  --json     print the op's result as JSON
"""

import os

VERDICTS = {
    "ok": "ok",
    "untested": "UNTESTED",
    "not-found": "not found",
    "no-version": "version unknown",
    "unchecked": "not checked",
    "broken": "BROKEN",
}


def table(checks):
    if not checks:
        return "no profiles"
    width = max(len(check["name"]) for check in checks)
    lines = []
    for check in checks:
        found = [VERDICTS.get(check["verdict"], check["verdict"])]
        if check.get("path"):
            found += [check["version"]] if check.get("version") else []
            found += ["at", check["path"]]
        lines.append(f"{check['name']:<{width}}  {' '.join(found)}")
        for note in check.get("notes") or []:
            lines.append(f"{'':<{width}}  - {note}")
    return "\n".join(lines)


def _reading(read):
    return "/".join(str(read.get(key)) for key in ("state", "status", "waitingFor"))


def drift_table(result):
    lines = [f"{result['replayed']} recorded screens replayed; {len(result['changes'])} would read otherwise"]
    for change in result["changes"]:
        lines.append(f"{change['id']} {change['name']}: {_reading(change['was'])} -> {_reading(change['now'])}"
                     f" ({change['rule']}{': ' + repr(change['line']) if change.get('line') else ''})")
    return "\n".join(lines)


ROOST_VERDICTS = {"ok": "ok", "problem": "PROBLEM", "off": "off"}


def roost_table(checks):
    width = max((len(check["check"]) for check in checks), default=0)
    return "\n".join(f"{check['check']:<{width}}  {ROOST_VERDICTS.get(check['verdict'], check['verdict'])}: "
                     f"{check['text']}" for check in checks)


def main(opts, ctx):
    from roost import __version__
    if opts["--screens"]:
        result = ctx.call("doctor", {"screens": True})
        ctx.show(opts, result, drift_table(result))
        return None
    from roost.bundle.userenv import is_text, user_environ

    environ = {name: value for name, value in user_environ(ctx.env).items() if is_text(name) and is_text(value)}
    cwd = os.path.abspath(ctx.env.get("PWD") or os.getcwd())
    result = ctx.call("doctor", {"env": environ, "cwd": cwd, "cliVersion": __version__})
    ours = result.get("roost") or []
    ctx.show(opts, result, "\n\n".join(part for part in (roost_table(ours), table(result["profiles"])) if part))
