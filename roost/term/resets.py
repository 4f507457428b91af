"""When a usage limit resets, from the text an agent's limit screen gives (issue 19):
the `reset` group of a profile's `term.limit` pattern, read without guessing.

`reset_at(text, seen_ms, tz_name)` gives epoch ms, or None when the text says nothing
this module can read for certain. The forms:

- a clock time, "3pm", "3:05 PM", "15:00", "15:00:30", maybe after a date ("Dec 3, 3pm", "Dec 3rd,
  2026 at 3:05 PM") and before a zone ("3pm (Europe/Berlin)", "3pm UTC"). Without a zone
  it is in `tz_name` (the job's TZ), else the machine's local zone; without a date it is
  the next such time after `seen_ms` (or one less than JUST_PASSED_MS before it: that
  one). A zone that is not an IANA name ("PST") is not guessed at: None.
- a duration, "in 2h 5m", "in 2 hours 5 minutes", "after 30 seconds", "retry after 12s", "in 454ms",
  or a text that is a duration and nothing else: from `seen_ms`, the moment the screen
  first showed the text (so a screen judged again later does not move the reset).
- an ISO 8601 time ("2026-12-03T15:00:00Z", "2026-12-03 15:00:00+01:00"; without an
  offset, in the zone a clock time would be).
- an epoch in seconds or ms after a `|` ("Claude AI usage limit reached|1765000000").
"""

import datetime
import re
import zoneinfo

_MONTHS = {name: number for number, names in enumerate(
    (("jan", "january"), ("feb", "february"), ("mar", "march"), ("apr", "april"), ("may",),
     ("jun", "june"), ("jul", "july"), ("aug", "august"), ("sep", "sept", "september"),
     ("oct", "october"), ("nov", "november"), ("dec", "december")), start=1) for name in names}

_EPOCH = re.compile(r"\|\s*(\d{10}|\d{13})\s*$")
_ISO = re.compile(r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,6})?)?(?:Z|[+-]\d{2}:?\d{2})?(?![\d:])")
_UNITS = {"d": 86400, "h": 3600, "m": 60, "s": 1}
# Milliseconds before minutes: OpenAI's rate limits say "Please try again in 454ms."
# (aider and pi show the provider's message as it is).
_PART = (r"(\d{1,5}(?:\.\d{1,3})?)\s*"
         r"(ms|msecs?|milliseconds?|d|days?|h|hrs?|hours?|m|mins?|minutes?|s|secs?|seconds?)\b")
_DURATION = rf"(?:{_PART}[\s,]*(?:and\s+)?)+"
_RELATIVE = re.compile(rf"\b(?:in|after)\s+({_DURATION})", re.IGNORECASE)
_ONLY_DURATION = re.compile(rf"^\s*({_DURATION})\s*$", re.IGNORECASE)
_PARTS = re.compile(_PART, re.IGNORECASE)
_MONTH_NAMES = "|".join(sorted(_MONTHS, key=len, reverse=True))
_CLOCK = re.compile(
    rf"(?:\b(?P<month>{_MONTH_NAMES})\.?\s+(?P<day>\d{{1,2}})(?:st|nd|rd|th)?,?\s*(?:(?P<year>\d{{4}}),?\s*)?"
    r"(?:at\s+)?)?"
    r"\b(?P<hour>\d{1,2})(?::(?P<minute>\d{2})(?::(?P<second>\d{2}))?)?\s*(?P<half>[ap]\.?m\.?)?(?![\w:])"
    r"(?:\s*\(\s*(?P<zone_paren>[A-Za-z][\w/+-]*)\s*\)|\s+(?P<zone>UTC|GMT|Z|[A-Z][a-z]+/[A-Za-z_/+-]+)\b)?",
    re.IGNORECASE)
_UTC_NAMES = ("utc", "gmt", "z")
# A clock time this little before the screen was seen is the reset that just passed (a
# screen read a moment late, a time shown to the minute), not the same time tomorrow.
JUST_PASSED_MS = 5 * 60_000


def reset_at(text, seen_ms, tz_name=None):
    """Epoch ms of the reset `text` names, or None (see the module's docstring)."""
    if not isinstance(text, str) or not text.strip() or not isinstance(seen_ms, (int, float)):
        return None
    text = " ".join(text.split())
    epoch = _EPOCH.search(text)
    if epoch is not None:
        value = int(epoch.group(1))
        return value * 1000 if len(epoch.group(1)) == 10 else value
    duration = _RELATIVE.search(text) or _ONLY_DURATION.search(text)
    if duration is not None:
        return int(seen_ms) + round(1000 * sum(float(number) * _unit_seconds(unit)
                                               for number, unit in _PARTS.findall(duration.group(1))))
    iso = _ISO.search(text)
    if iso is not None:
        return _iso_time(iso.group(0), tz_name)
    for clock in _CLOCK.finditer(text):
        value = _clock_time(clock, seen_ms, tz_name)
        if value is not False:
            return value
    return None


def job_zone_name(env):
    """The zone a job's TZ names (its launch env), or None: the machine's own."""
    value = (env or {}).get("TZ") if isinstance(env, dict) else None
    if not isinstance(value, str) or not value.strip():
        return None
    return value.strip().lstrip(":") or None


def _zone(name):
    """A tzinfo for an IANA name; None for the machine's local zone; False when unknown."""
    if name is None:
        return None
    if name.lower() in _UTC_NAMES:
        return datetime.timezone.utc
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        return False


def _iso_time(text, tz_name):
    try:
        moment = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        zone = _zone(tz_name)
        moment = moment.replace(tzinfo=zone if zone is not False else None)
    return int(moment.timestamp() * 1000)


def _unit_seconds(unit):
    unit = unit.lower()
    return 0.001 if unit.startswith(("ms", "milli")) else _UNITS[unit[0]]


def _clock_time(clock, seen_ms, tz_name):
    """Epoch ms of one clock match; None when it is a clock time roost cannot place;
    False when the match is no clock time at all (a bare number)."""
    hour, minute, half = int(clock.group("hour")), clock.group("minute"), clock.group("half")
    if minute is None and half is None:
        return False                      # "3" alone is no time of day
    minute, second = int(minute or 0), int(clock.group("second") or 0)
    if half is not None:
        if not 1 <= hour <= 12:
            return None
        hour = hour % 12 + (12 if half[0].lower() == "p" else 0)
    if hour > 23 or minute > 59 or second > 59:
        return None
    named = clock.group("zone_paren") or clock.group("zone")
    zone = _zone(named) if named else _zone(tz_name)
    if zone is False:
        if named:
            return None                   # a zone it names but roost does not know
        zone = None                       # a job's TZ that is no zone name: the machine's
    seen = datetime.datetime.fromtimestamp(seen_ms / 1000, zone)
    month = clock.group("month")
    if month is not None:
        return _dated(clock, _MONTHS[month.lower()], (hour, minute, second), zone, seen)
    day = seen.date()
    at = _at(day, (hour, minute, second), zone)
    if at <= seen_ms - JUST_PASSED_MS:
        at = _at(day + datetime.timedelta(days=1), (hour, minute, second), zone)
    return at


def _dated(clock, month, clock_time, zone, seen):
    day = int(clock.group("day"))
    years = [int(clock.group("year"))] if clock.group("year") else [seen.year - 1, seen.year, seen.year + 1]
    candidates = []
    for year in years:
        try:
            candidates.append(_at(datetime.date(year, month, day), clock_time, zone))
        except ValueError:
            continue
    if not candidates:
        return None
    # Without a year: the one nearest the moment the screen showed it.
    seen_ms = seen.timestamp() * 1000
    return min(candidates, key=lambda at: abs(at - seen_ms))


def _at(day, clock_time, zone):
    """Epoch ms of a wall-clock time on `day` in `zone` (None: the machine's local zone,
    which a naive datetime's timestamp() reads with its own daylight saving rules)."""
    moment = datetime.datetime(day.year, day.month, day.day, *clock_time, tzinfo=zone)
    return int(moment.timestamp() * 1000)
