"""Check each agent profile's agent: is it on PATH (this shell's, which `roost run`
gives the job), which version is installed, and was the profile's screen reading
checked on that version? Says what else to know: a profile of roost.json that
replaces a built-in one, a bundled file missing, a term that is refused.

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


def main(opts, ctx):
    if opts["--screens"]:
        result = ctx.call("doctor", {"screens": True})
        ctx.show(opts, result, drift_table(result))
        return None
    from roost.bundle.userenv import is_text, user_environ

    environ = {name: value for name, value in user_environ(ctx.env).items() if is_text(name) and is_text(value)}
    cwd = os.path.abspath(ctx.env.get("PWD") or os.getcwd())
    result = ctx.call("doctor", {"env": environ, "cwd": cwd})
    ctx.show(opts, result, table(result["profiles"]))
