"""The totals `roost usage` shows: every job's tallies (roost.spend.tracker.entries),
those from a day on, grouped by job, task, project, provider, model, day or host.

A group's `usd` is null, with the models named in `unpriced`, when any model in it has
no price; the total likewise. A task's group is every job it ever had (its verify runs
and retries too); a job started on no task is in the group whose key is null. A day is
the user's local day.
"""

import datetime
import re

from roost.errors import bad_request
from roost.spend import tokens

BY = ("job", "task", "project", "provider", "model", "day", "host")


def since_day(when, today):
    """The first local day counted: YYYY-MM-DD, `today`, `yesterday`, or `Nd` (N days
    back, today being 0d); None: every day. `today`: YYYY-MM-DD, the clock's."""
    if when is None:
        return None
    if not isinstance(when, str):
        raise bad_request("since must be YYYY-MM-DD, today, yesterday or Nd")
    text = when.strip().lower()
    base = datetime.date.fromisoformat(today)
    if text == "today":
        return today
    if text == "yesterday":
        return (base - datetime.timedelta(days=1)).isoformat()
    match = re.fullmatch(r"(\d{1,4})d", text)
    if match:
        return (base - datetime.timedelta(days=int(match.group(1)))).isoformat()
    try:
        return datetime.date.fromisoformat(text).isoformat()
    except ValueError:
        raise bad_request(f"since {when!r} is not YYYY-MM-DD, today, yesterday or Nd") from None


def _keys(entry, by, day, model):
    if by == "job":
        return entry.get("id")
    if by == "day":
        return day
    if by == "model":
        return model
    return entry.get(by)


def group(entries, by, since, prices):
    """{groups: [{key, tokens, usd, unpriced, jobs}], total: {tokens, usd, unpriced}}."""
    if by not in BY:
        raise bad_request(f"by must be one of {', '.join(BY)}")
    groups = {}
    whole = {}
    for entry in entries:
        for day, models in (entry.get("tally") or {}).items():
            if since is not None and (day == "unknown" or day < since):
                continue
            for model, count in models.items():
                if not any(count):
                    continue
                key = _keys(entry, by, day, model)
                into = groups.setdefault(key, {"models": {}, "jobs": set()})
                tokens.add(into["models"].setdefault(model, tokens.zero()), count)
                into["jobs"].add(entry.get("id"))
                tokens.add(whole.setdefault(model, tokens.zero()), count)
    shown = []
    for key in sorted(groups, key=lambda key: (key is None, str(key))):
        into = groups[key]
        usd, unpriced = prices.usd(into["models"])
        shown.append({"key": key, "tokens": tokens.as_dict(_sum(into["models"])), "usd": usd,
                      "unpriced": unpriced, "jobs": sorted(job for job in into["jobs"] if job)})
    usd, unpriced = prices.usd(whole)
    return {"groups": shown, "total": {"tokens": tokens.as_dict(_sum(whole)), "usd": usd, "unpriced": unpriced}}


def _sum(by_model):
    whole = tokens.zero()
    for count in by_model.values():
        tokens.add(whole, count)
    return whole


def merge(results, by):
    """Several machines' `usage` results as one (`roost usage --host A --host B`): the
    groups of one key added up; a usd is null when any of its parts is."""
    groups = {}
    for result in results:
        for entry in result.get("groups") or ():
            into = groups.setdefault(entry["key"], {"key": entry["key"], "tokens": dict.fromkeys(tokens.FIELDS, 0),
                                                    "usd": 0.0, "unpriced": [], "jobs": []})
            _add_into(into, entry)
    total = {"tokens": dict.fromkeys(tokens.FIELDS, 0), "usd": 0.0, "unpriced": []}
    for result in results:
        _add_into(total, result.get("total") or {})
    return {"groups": [groups[key] for key in sorted(groups, key=lambda key: (key is None, str(key)))],
            "total": total}


def _add_into(into, part):
    for field in tokens.FIELDS:
        into["tokens"][field] += (part.get("tokens") or {}).get(field) or 0
    into["unpriced"] = sorted(set(into["unpriced"]) | set(part.get("unpriced") or ()))
    if into["usd"] is None or part.get("usd") is None:
        into["usd"] = None
    else:
        into["usd"] = round(into["usd"] + part["usd"], 6)
    if "jobs" in into:
        into["jobs"] = sorted(set(into["jobs"]) | set(part.get("jobs") or ()))


def totals(entries, day=None, provider=None, task=None, job_id=None):
    """{model: count} of the entries' tallies that match: spent on `day`, by
    `provider`'s jobs, on `task`, by the job `job_id`."""
    by_model = {}
    for entry in entries:
        if (provider is not None and entry.get("provider") != provider) or \
                (task is not None and entry.get("task") != str(task)) or \
                (job_id is not None and entry.get("id") != job_id):
            continue
        for when, models in entry["tally"].items():
            if day is not None and when != day:
                continue
            for model, count in models.items():
                tokens.add(by_model.setdefault(model, tokens.zero()), count)
    return by_model

