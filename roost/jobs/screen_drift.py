"""`roost doctor --screens`: every recorded screen judged again by the profile as it is
now (issue 19 item 3), the drift canary for a user's own agents. A profile changed in
roost.json, or a release of roost with other built-in patterns, reads some recorded
screen otherwise: each such screen is listed with what it read then and reads now.

Only screens a judgement decided are replayed (their `why` names a rule of the
profile); a working reading taken while output came decided nothing, nor did the
kernel's word (issue 27: `kernel`, `held`, and the `quiet` screens of a profile with no
waiting pattern, which before it were taken for waiting) replay from a screen.
"""

from roost.jobs import profiles, timeline
from roost.term.reading import TermProfile

JUDGED = ("working", "dialog", "waiting", "none")
_READ = ("state", "status", "waitingFor")
MAX_CHANGES = 500


def current_term(job, config):
    """The term of the job's profile as roost.json and this release say now, else the
    one it was launched with."""
    name = job.launch.get("profile")
    try:
        profile = profiles.find(config, name) if name else None
    except Exception:       # a broken roost.json entry: the launch's own term
        profile = None
    term = profile.get("term") if isinstance(profile, dict) and isinstance(profile.get("term"), dict) \
        else job.launch.get("term")
    return TermProfile(term) if isinstance(term, dict) or term is None else TermProfile(None)


def drift(jobs, config):
    """{replayed, changes: [{id, name, at, was, now, line}]} over every job's timeline."""
    replayed = 0
    changes = []
    for job in jobs:
        if job.protocol or not job.job_dir:
            continue
        profile = current_term(job, config)
        for entry in timeline.read(job.job_dir):
            why = entry.get("why") or {}
            if entry.get("kind") != "state" or why.get("rule") not in JUDGED or "screen" not in entry:
                continue
            replayed += 1
            reading = profile.judge(entry["screen"].split("\n"), bool(why.get("typed")))
            was = {key: entry.get(key) for key in _READ}
            now = {key: reading.get(key) for key in _READ}
            if was != now and len(changes) < MAX_CHANGES:
                changes.append({"id": job.id, "name": job.name, "at": entry.get("at"), "was": was,
                                "now": now, "rule": (reading.get("why") or {}).get("rule"),
                                "line": (reading.get("why") or {}).get("line")})
    return {"replayed": replayed, "changes": changes}
