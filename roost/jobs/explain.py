"""Why a job's row says what it says now, in one paragraph a person can read (issue 19
item 3, `roost explain`): the rule that decided the reading (roost.term.reading's `why`),
what holds roost's typing, what waits to be typed, and since when.
"""

import time

from roost.jobs.record import END_STATES
from roost.unix.terminal_waits import describe


def explain(job, settle_ms=None, limit_plan=None):
    """The paragraph for `job`'s row as it is now; `limit_plan`: what roost does at its
    usage limit's reset (roost.jobs.limit_resume), for a row at one."""
    row = job.row()
    terminal = job.terminal if job.running else None
    said = _said(row)
    parts = [f"{job.name} ({job.id}) is {said} since {_clock(row.get('stateSince'))}."]
    if row.get("waitingFor") == "limit" and row["state"] not in END_STATES:
        parts.append(_at_limit(row, job.record.get("limitSeen")))
        if limit_plan:
            parts.append(limit_plan)
    if row["state"] in END_STATES or not job.running:
        parts.append(_ended(job, row))
    elif job.record.get("reported"):
        parts.append("Its agent speaks the roost protocol and said so itself in its last report; "
                     "roost does not read its screen.")
    elif terminal is None:
        parts.append("roost has no terminal for it yet, so nothing on its screen has been read.")
    else:
        parts.append(_from_screen(terminal.reading.get("why") or {}, row, terminal.profile.settle))
    if row.get("held"):
        parts.append("roost types nothing into it now: a person attached to it has typed a line not yet "
                     "submitted; it goes on once they submit it, clear it (Ctrl-U) or detach.")
    if row.get("queued"):
        count = row["queued"]
        parts.append(f"{count} repl{'y waits' if count == 1 else 'ies wait'} to be typed, "
                     "each once the screen waits for text.")
    if row.get("unreadSince"):
        parts.append(f"Its screen has matched none of its profile's patterns since {_clock(row['unreadSince'])}.")
    if row.get("error") and row["state"] not in END_STATES:
        parts.append(f"Last problem: {row['error']}.")
    return " ".join(parts)


def _said(row):
    state, waiting_for = row["state"], row.get("waitingFor")
    if state == "blocked" and waiting_for == "dialog":
        return "blocked on a dialog" + (f" ({row['question']!r})" if row.get("question") else "")
    if state == "blocked" and waiting_for == "first-prompt":
        return "waiting for its first prompt"
    if state == "blocked" and waiting_for == "limit":
        return "blocked at its usage limit"
    if state == "blocked" and waiting_for == "budget":
        hold = row.get("budgetHold") or {}
        return (f"parked at a budget ({hold.get('why') or 'it went over one'}): roost types nothing into it "
                f"until `roost budget allow {row['id']}`")
    if state == "blocked" and waiting_for == "question":
        return "waiting for the user's answer"
    if state == "blocked" and row.get("status") is None:
        return "unknown (?): blocked, in a state roost cannot read"
    return state or "starting"


def _at_limit(row, limit_seen):
    """issue 19: 'It stopped at its usage limit; resets at 15:00 (from the screen's "3pm").'"""
    reset_text = limit_seen.get("text") if isinstance(limit_seen, dict) else None
    if row.get("resetsAt"):
        said = f"It stopped at its usage limit; resets at {_clock(row['resetsAt'], '%H:%M')}"
        return said + (f' (from the screen\'s "{reset_text}").' if reset_text else ".")
    if reset_text:
        return f'It stopped at its usage limit; the screen\'s "{reset_text}" gives no reset time roost can read.'
    return "It stopped at its usage limit; the screen gives no reset time."


def _from_screen(why, row, settle):
    said = _from_rule(why, row, settle)
    if why.get("kernel") and why.get("rule") not in ("kernel", "held"):
        said += f" The kernel, asked beside it: {_kernel(why['kernel'])}."
    return said


def _kernel(evidence):
    """What the kernel said, and who read it (issue 27)."""
    by = {"keeper": " (read by the keeper)", "daemon": " (read by the daemon)"}.get(evidence.get("by"), "")
    return describe(evidence) + by


def _from_rule(why, row, settle):
    rule = why.get("rule")
    matched = f"the profile's {rule} pattern /{why.get('pattern')}/ matched the screen's line {why.get('line')!r}"
    if rule == "working":
        return f"Its screen was read as working because {matched}."
    if rule == "changed":
        return (f"Its screen is changing (output came since it was last judged), so it reads as working "
                f"until it has been quiet for {settle:g} s and is judged again.")
    if rule == "typed":
        return ("roost typed text into it and saw it submitted; it reads as working until its screen "
                "has been quiet and is judged again.")
    if rule == "limit":
        return (f"Its screen was read as at its usage limit because {matched}. roost types nothing it "
                "queued into it until it works again.")
    if rule == "dialog":
        choices = ", ".join(row.get("choices") or []) or "none recognised"
        return (f"Its screen was read as a dialog because {matched} (its choices: {choices}). roost never "
                "types into a dialog by itself: answer it with `roost reply` or `roost keys`, or attach.")
    after = "an answer" if why.get("typed") else "its first prompt"
    if rule == "waiting":
        return f"Its screen was read as waiting for {after} because {matched}; roost may type replies now."
    if rule == "kernel":
        verdict = (why.get("kernel") or {}).get("verdict")
        asked = "its first task" if row.get("waitingFor") == "first-prompt" else "an answer"
        meaning = {"reads": f"so it waits for {asked}; roost may type replies now",
                   "busy": "so it works, however long its screen stays quiet",
                   }.get(verdict, "and that cannot tell whether it waits: roost types nothing into it and calls "
                                  "no one for it (`roost peek` shows the screen, `roost keys` answers it)")
        return (f"Its profile names no waiting pattern, so roost asked the kernel what its processes do: "
                f"{_kernel(why.get('kernel') or {})}; {meaning}.")
    if rule == "held":
        screen = why.get("screen") or {}
        return (f"Its screen reads {screen.get('rule')} (the pattern /{screen.get('pattern')}/ matched "
                f"{screen.get('line')!r}), but the kernel says {_kernel(why.get('kernel') or {})}; so roost "
                f"holds the row as it was ({row['state']}) until the two agree, and types nothing meanwhile.")
    if rule == "quiet":
        return (f"Its profile names no waiting pattern and its screen has been quiet for {settle:g} s; "
                "roost has not had the kernel's word on it yet.")
    if rule == "none":
        return (f"Its screen has been quiet for {settle:g} s but matched none of its profile's patterns "
                "(working, dialog, waiting): roost does not know what it shows, and types nothing into it "
                "until it does (`roost peek` shows the screen).")
    return "Its screen has not been judged yet."


def _ended(job, row):
    # A failed program's exit status is in the row's error (roost.jobs.run_end).
    text = {"done": "Its program ended well", "failed": "Its program failed",
            "stopped": "It was stopped"}.get(row["state"], "Its program is not running")
    if row.get("endedAt"):
        text += f" at {_clock(row['endedAt'])}"
    if row.get("error"):
        text += f": {row['error']}"
    return text + "."


def _clock(ms, form="%H:%M:%S"):
    if not ms:
        return "an unknown time"
    return time.strftime(form, time.localtime(ms / 1000))
