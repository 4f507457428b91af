"""Schedules' next times (roost.schedule.when): the slot after a moment, for each way a
schedule says when, in a zone of its own (DST included)."""

import datetime
import zoneinfo

import pytest

from roost.errors import RoostError
from roost.schedule import when

BERLIN = zoneinfo.ZoneInfo("Europe/Berlin")


def ms(*fields, zone=BERLIN):
    return int(datetime.datetime(*fields, tzinfo=zone).timestamp() * 1000)


def slots(rule, start, count, anchor=None):
    found, at = [], start
    for _ in range(count):
        at = rule.next_after(at, anchor)
        found.append(at)
    return found


def test_every_counts_from_its_anchor_and_skips_what_was_missed():
    rule = when.parse("every 15m", BERLIN)
    anchor = ms(2026, 12, 2, 10, 0)
    assert slots(rule, anchor - 1, 3, anchor) == [anchor, anchor + 900_000, anchor + 1_800_000]
    # A daemon away for an hour: the next slot after now, not the four it missed.
    assert rule.next_after(anchor + 3_600_000 + 5, anchor) == anchor + 4_500_000


def test_daily_and_weekdays_at_a_time_in_the_zone():
    daily = when.parse("daily 09:30", BERLIN)
    assert slots(daily, ms(2026, 12, 4, 10, 0), 2) == [ms(2026, 12, 5, 9, 30), ms(2026, 12, 6, 9, 30)]
    weekdays = when.parse("weekdays 09:30", BERLIN)
    # Friday 10:00: the next weekday is Monday.
    assert weekdays.next_after(ms(2026, 12, 4, 10, 0)) == ms(2026, 12, 7, 9, 30)


def test_a_cron_slot_keeps_its_local_time_across_a_dst_change():
    rule = when.parse('cron "0 9 * * *"', BERLIN)
    before = ms(2026, 3, 28, 12, 0)          # the night after is the spring change
    first, second = slots(rule, before, 2)
    assert (first, second) == (ms(2026, 3, 29, 9, 0), ms(2026, 3, 30, 9, 0))
    assert second - first == 24 * 3_600_000 and first - ms(2026, 3, 28, 9, 0) == 23 * 3_600_000


@pytest.mark.parametrize("said", ["every 10s", 'cron "0 9 * *"', "sometimes", ""])
def test_a_when_roost_does_not_know_is_refused(said):
    with pytest.raises(RoostError):
        when.parse(said, BERLIN)
