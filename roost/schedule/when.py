"""M39's vocabulary for when something runs: `every 30m` (also `h` and `d`), `daily
18:00`, `weekdays 09:00` and `cron "..."`, read in the user's local time zone.

`every` is a fixed interval from an anchor (the schedule's start), so a DST change does
not move it. The clock times are cron expressions under the hood: cronsim walks them in
local time, where a time a DST change skips runs at the first minute after it and one
it repeats runs once (Debian cron's rules).
"""

import datetime
import os
import re
import zoneinfo

from cronsim import CronSim, CronSimError

from roost.errors import bad_request

_UNITS_MS = {"m": 60_000, "h": 3_600_000, "d": 86_400_000}
_EVERY = re.compile(r"every\s+(\d{1,6})\s*(m|h|d)", re.IGNORECASE)
_AT = re.compile(r"(daily|weekdays)\s+([01]?\d|2[0-3]):([0-5]\d)", re.IGNORECASE)
_CRON = re.compile(r'cron\s+"([^"]*)"', re.IGNORECASE)
SAY = 'every 30m, daily 18:00, weekdays 09:00 or cron "0 9 * * 1-5"'
# An interval shorter than a minute would make roost a busy loop, not a clock.
MIN_EVERY_MS = 60_000


def local_zone():
    """The user's time zone: $TZ when it names one, else the system's, else UTC."""
    name = (os.environ.get("TZ") or "").lstrip(":")
    if name:
        try:
            return zoneinfo.ZoneInfo(name)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            pass
    try:
        with open("/etc/localtime", "rb") as handle:
            return zoneinfo.ZoneInfo.from_file(handle, key="localtime")
    except (OSError, ValueError):
        return datetime.timezone.utc


class Every:
    def __init__(self, interval_ms):
        self.interval_ms = interval_ms

    def next_after(self, at_ms, anchor_ms):
        """The first slot (anchor + k * interval) after `at_ms`."""
        if at_ms < anchor_ms:
            return anchor_ms
        return anchor_ms + ((at_ms - anchor_ms) // self.interval_ms + 1) * self.interval_ms


class Cron:
    def __init__(self, expression, zone):
        self.expression = expression
        self.zone = zone

    def next_after(self, at_ms, anchor_ms=None):
        start = datetime.datetime.fromtimestamp(at_ms / 1000, tz=self.zone)
        try:
            following = next(CronSim(self.expression, start))
        except StopIteration:
            return None      # never again (cronsim gives up after years without a match)
        return int(following.timestamp() * 1000)


def parse(when, zone=None):
    """The rule `when` says, or bad_request naming the vocabulary."""
    if not isinstance(when, str) or not when.strip():
        raise bad_request(f"when must say {SAY}")
    text = " ".join(when.split())
    zone = zone or local_zone()
    every = _EVERY.fullmatch(text)
    if every:
        interval = int(every.group(1)) * _UNITS_MS[every.group(2).lower()]
        if interval < MIN_EVERY_MS:
            raise bad_request("every needs at least 1m")
        return Every(interval)
    at = _AT.fullmatch(text)
    if at:
        days = "*" if at.group(1).lower() == "daily" else "1-5"
        return Cron(f"{int(at.group(3))} {int(at.group(2))} * * {days}", zone)
    cron = _CRON.fullmatch(text)
    if cron:
        expression = cron.group(1).strip()
        if len(expression.split()) != 5:
            raise bad_request(f"cron takes five fields (minute hour day month weekday), not {expression!r}")
        try:
            CronSim(expression, datetime.datetime.now(tz=zone))
        except CronSimError as error:
            raise bad_request(f"cron {expression!r}: {error}") from None
        return Cron(expression, zone)
    raise bad_request(f"when {when!r} is not one roost knows: say {SAY}")


def normal(when):
    """`when` as it is kept and shown: its words single-spaced."""
    return " ".join(when.split())
