"""Token counts as roost keeps them: `input` is every input token (cache reads and
writes included), `cacheRead` and `cacheWrite` are also given on their own, `output`
includes reasoning. A count is a list [input, output, cacheRead, cacheWrite] inside the
ledgers (small and fast to add), a dict with these names on the wire."""

import datetime
import time

FIELDS = ("input", "output", "cacheRead", "cacheWrite")


def zero():
    return [0, 0, 0, 0]


def add(into, count):
    for index in range(4):
        into[index] += count[index]
    return into


def as_dict(count):
    return dict(zip(FIELDS, count))


def from_dict(value):
    """A count from a dict of those names (absent or not a whole number: 0)."""
    if not isinstance(value, dict):
        return zero()
    return [_whole(value.get(field)) for field in FIELDS]


def _whole(value):
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def whole(value):
    return _whole(value)


def name(value):
    """A model's name as a record gives it, kept only when it is a short printable text
    (it becomes a key of the ledger, written again): else "unknown"."""
    if isinstance(value, str) and 0 < len(value) <= 200 and value.isprintable():
        try:
            value.encode("utf-8")
            return value
        except UnicodeEncodeError:
            return "unknown"
    return "unknown"


def is_zero(count):
    return not any(count)


# -- the user's local day ---------------------------------------------------------------

_days = {}          # "YYYY-MM-DDTHH:MM" (UTC) -> the local day then
_DAYS_KEPT = 20_000


def local_day(stamp):
    """The local day (YYYY-MM-DD) of an ISO 8601 time ("2026-12-06T06:52:21.107Z"), or
    None. Zones differ from UTC by whole quarters of an hour, so the minute decides:
    kept per minute, a file of thousands of lines parses a handful of times."""
    if not isinstance(stamp, str) or len(stamp) < 16:
        return None
    # The offset is part of the key: "...T06:52+02:00" is another minute than "...T06:52Z".
    minute = stamp[:16] + (stamp[-6:] if stamp[-6] in "+-" else "Z")
    day = _days.get(minute)
    if day is None:
        when = iso_time(stamp)
        if when is None:
            return None
        if len(_days) > _DAYS_KEPT:
            _days.clear()
        day = _days[minute] = time.strftime("%Y-%m-%d", time.localtime(when.timestamp()))
    return day


def iso_time(stamp):
    """An ISO 8601 time as the agents write it (`Z` or an offset; none: UTC), or None."""
    try:
        when = datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=datetime.timezone.utc)


def day_of_ms(ms):
    """The local day (YYYY-MM-DD) of a time in ms (roost.clock's, for today)."""
    return time.strftime("%Y-%m-%d", time.localtime(ms / 1000))
