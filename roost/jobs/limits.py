"""A job at its usage limit (issue 19 item 1): its row's `resetsAt`, and what is kept to
read it. A limit screen's reading (roost.term.reading) gives its reset text; the row's
`resetsAt` is that text read as of the moment the job's screen first showed it
(`limitSeen` in its record: {text, at}), in the job's own zone (its TZ), so a screen
judged again later, or by a daemon started since, does not move the reset. The same
text seen again once that reset has passed is a new limit.
"""

import time

from roost.clock import now_ms
from roost.errors import RoostError
from roost.jobs import profiles
from roost.term import resets

# A reset this long past still counts as the same limit for the same text: the resume
# comes a little after the reset, and its screen may show the old text until then.
SAME_LIMIT_MS = 10 * 60_000


def parked(row):
    """The row waits at a usage limit that says when it resets."""
    return row.get("waitingFor") == "limit" and row.get("resetsAt") is not None


def reading_fields(job, reading, now=None):
    """The row's (and record's) limit fields for a new reading of the job's screen, seen
    at `now` (ms; None: the clock's now)."""
    if reading.get("waitingFor") != "limit":
        return {"resetsAt": None}
    why = reading.get("why") or {}
    text = why.get("reset")
    now = now_ms() if now is None else now
    if not text:
        # issue 29: the agent's own records may know it (a rejection with the plan window's
        # reset: roost.spend), where the screen does not say.
        known = job.record.get("limitFromRecords")
        at = known.get("resetsAt") if isinstance(known, dict) else None
        return {"resetsAt": at if isinstance(at, int) and at > now else None, "limitSeen": None}
    zone = resets.job_zone_name(job.launch.get("env"))
    seen = job.record.get("limitSeen")
    if isinstance(seen, dict) and seen.get("text") == text and isinstance(seen.get("at"), int):
        at = resets.reset_at(text, seen["at"], zone)
        if at is not None and at + SAME_LIMIT_MS > now:
            return {"resetsAt": at, "limitSeen": seen}
    return {"resetsAt": resets.reset_at(text, now, zone), "limitSeen": {"text": text, "at": now}}


# Parked jobs of one provider whose resets are this close are one limit hit together.
GROUP_WINDOW_MS = 5 * 60_000


def provider_of(job):
    """Whose limit it is: its profile's `provider`, else the profile's name."""
    return job.launch.get("provider") or job.launch.get("profile") or job.record.get("profile") or "shell"


def groups(jobs):
    """The parked jobs in groups: one provider, resets within GROUP_WINDOW_MS of the
    group's first; each group [(job, resetsAt)], earliest reset first."""
    parked_jobs = sorted(((provider_of(job), job.record["resetsAt"], job) for job in jobs
                          if job.live and parked(job.record)), key=lambda item: (item[0], item[1]))
    found = []
    for provider, resets_at, job in parked_jobs:
        last = found[-1] if found else None
        if last is None or last[0] != provider or resets_at - last[1] > GROUP_WINDOW_MS:
            last = (provider, resets_at, [])
            found.append(last)
        last[2].append(job)
    return sorted(found, key=lambda group: group[1])


def known_reset(jobs, provider, now=None):
    """The latest future reset of a parked job of `provider` (ms), or None: a launch of
    that provider now would start into its limit."""
    now = now_ms() if now is None else now
    future = [job.record["resetsAt"] for job in jobs
              if job.live and parked(job.record) and provider_of(job) == provider and job.record["resetsAt"] > now]
    return max(future, default=None)


def known_limit(launcher, args, now=None):
    """(provider, resetsAt) when a launch of `args` would start into a usage limit that a
    parked job of the same provider waits at; else None. A launch without a profile, or
    whose profile does not resolve (its launch says why), has none."""
    name = args.get("profile") if isinstance(args, dict) else None
    if not isinstance(name, str) or not name:
        return None
    try:
        profile = profiles.find(launcher.config.current(), name)
    except RoostError:
        return None
    provider = profiles.provider(name, profile)
    reset = known_reset(launcher.registry.all(), provider, now)
    return (provider, reset) if reset is not None else None


def clock(ms):
    return time.strftime("%H:%M", time.localtime(ms / 1000))
