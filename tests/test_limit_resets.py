"""issue 19: the reset text of a limit screen read into epoch ms (roost.term.resets), and
a profile's `limit` pattern read as `waitingFor: "limit"` (roost.term.reading)."""

import datetime
import time

import pytest

from roost.term.reading import TermProfile, ready_for_text
from roost.term.resets import reset_at

UTC = datetime.timezone.utc


def ms(*fields, zone=UTC):
    if isinstance(zone, str):
        import zoneinfo
        zone = zoneinfo.ZoneInfo(zone)
    return int(datetime.datetime(*fields, tzinfo=zone).timestamp() * 1000)


SEEN = ms(2026, 12, 2, 10, 0)          # a Wednesday, 10:00 UTC


@pytest.mark.parametrize("text, expected", [
    ("3pm", ms(2026, 12, 2, 15, 0)),
    ("3:05 PM", ms(2026, 12, 2, 15, 5)),
    ("15:00", ms(2026, 12, 2, 15, 0)),
    ("3:05pm", ms(2026, 12, 2, 15, 5)),
    ("15:00:30", ms(2026, 12, 2, 15, 0, 30)),
    ("12am", ms(2026, 12, 3, 0, 0)),
    ("12pm", ms(2026, 12, 2, 12, 0)),
    ("9am", ms(2026, 12, 3, 9, 0)),                    # passed today: tomorrow's
    ("9:58am", ms(2026, 12, 2, 9, 58)),                # a moment ago: the one that just passed
    ("Dec 3, 3pm", ms(2026, 12, 3, 15, 0)),
    ("Dec 3 at 3:05 PM", ms(2026, 12, 3, 15, 5)),
    ("Jan 1, 12am", ms(2027, 1, 1, 0, 0)),             # the nearest such date
    ("Sep 12th, 2027 8:05 PM", ms(2027, 9, 12, 20, 5)),
    ("3pm (Europe/Berlin)", ms(2026, 12, 2, 14, 0)),
    ("resets 3pm (America/New_York)", ms(2026, 12, 2, 20, 0)),
    ("3pm UTC", ms(2026, 12, 2, 15, 0)),
    ("try again at 8:05 PM.", ms(2026, 12, 2, 20, 5)),
    ("in 2h 5m", SEEN + (2 * 3600 + 5 * 60) * 1000),
    ("in 2 hours 5 minutes", SEEN + (2 * 3600 + 5 * 60) * 1000),
    ("in 37s", SEEN + 37_000),
    ("in 1 hour", SEEN + 3_600_000),
    ("after 30 seconds", SEEN + 30_000),
    ("retry after 12s", SEEN + 12_000),
    ("in 5m 3s", SEEN + 303_000),
    ("try again in 4 days 3 hours", SEEN + (4 * 86400 + 3 * 3600) * 1000),
    ("2 hours 5 minutes", SEEN + (2 * 3600 + 5 * 60) * 1000),
    ("Retrying in 0.2 seconds...", SEEN + 200),
    ("in 1.5h", SEEN + 5_400_000),
    ("Please try again in 454ms.", SEEN + 454),                     # OpenAI's, as aider and pi show it
    ("in 1.5s", SEEN + 1_500),
    ("in 2 milliseconds", SEEN + 2),
    ("in 1m 30s", SEEN + 90_000),
    ("2026-12-03T15:00:00Z", ms(2026, 12, 3, 15, 0)),
    ("resets 2026-12-03 15:00:00+01:00", ms(2026, 12, 3, 14, 0)),
    ("2026-12-03T15:00", ms(2026, 12, 3, 15, 0)),
    ("Claude AI usage limit reached|1765000000", 1_765_000_000_000),
    ("limit|1765000000123", 1_765_000_000_123),
])
def test_a_reset_text_is_read(text, expected):
    assert reset_at(text, SEEN, "UTC") == expected


@pytest.mark.parametrize("text", ["soon", "later today", "3pm (PST)", "13pm", "25:00", "at 3", "", None,
                                  "1765000000", "resets whenever"])
def test_what_is_not_certain_is_none(text):
    assert reset_at(text, SEEN, "UTC") is None


def test_the_zone_absent_is_the_jobs_zone_then_the_machines():
    assert reset_at("3pm", SEEN, "Asia/Tokyo") == ms(2026, 12, 3, 15, 0, zone="Asia/Tokyo")
    assert reset_at("3pm (UTC)", SEEN, "Asia/Tokyo") == ms(2026, 12, 2, 15, 0)
    local = datetime.datetime.fromtimestamp(SEEN / 1000)
    expected = datetime.datetime(local.year, local.month, local.day, 15, 0)
    if expected.timestamp() * 1000 <= SEEN - 5 * 60_000:
        expected += datetime.timedelta(days=1)
    assert reset_at("3pm", SEEN, None) == int(expected.timestamp() * 1000)
    assert reset_at("3pm", SEEN, "Not/AZone") == reset_at("3pm", SEEN, None)


def test_a_dst_day_is_counted_in_wall_clock_time():
    berlin = "Europe/Berlin"
    # The night of 28-29 March 2026 Berlin goes from 02:00 CET to 03:00 CEST.
    before = ms(2026, 3, 28, 16, 0, zone=berlin)
    assert reset_at("3pm", before, berlin) == ms(2026, 3, 29, 13, 0)          # 15:00 CEST
    assert reset_at("3pm", before, berlin) - before == 22 * 3600 * 1000       # not 23 h
    assert reset_at("in 5h", before, berlin) == before + 5 * 3600 * 1000      # a duration is a duration
    autumn = ms(2026, 10, 25, 0, 30, zone=berlin)                             # 03:00 CEST -> 02:00 CET
    assert reset_at("Oct 25, 4am", autumn, berlin) == ms(2026, 10, 25, 3, 0)


TERM = {"waiting": r"^> ?$", "limit": r"You've hit your limit · resets (?P<reset>.+)$",
        "dialog": r"^Do you trust"}
SCREEN = ["working...", "You've hit your limit · resets 3pm (Europe/Berlin)", "> "]


@pytest.mark.parametrize("linear", [False, True])
def test_a_limit_screen_reads_as_limit_with_its_reset(linear):
    reading = TermProfile(dict(TERM, linear=linear)).judge(SCREEN, True, SEEN)
    assert reading["state"] == "blocked" and reading["status"] == "waiting"
    assert reading["waitingFor"] == "limit"
    assert reading["resetsAt"] == ms(2026, 12, 2, 14, 0)
    assert reading["summary"] == "You've hit your limit · resets 3pm (Europe/Berlin)"
    assert reading["why"]["rule"] == "limit" and reading["why"]["reset"] == "3pm (Europe/Berlin)"
    assert reading["why"]["line"] == "You've hit your limit · resets 3pm (Europe/Berlin)"
    assert not ready_for_text(reading)


def test_a_limit_without_a_reset_group_or_readable_text_has_no_reset():
    reading = TermProfile({"limit": r"usage limit reached", "waiting": "^> $"}).judge(
        ["usage limit reached", "> "], False, SEEN)
    assert reading["waitingFor"] == "limit" and reading["resetsAt"] is None
    reading = TermProfile(TERM).judge(["You've hit your limit · resets soon", "> "], True, SEEN)
    assert reading["waitingFor"] == "limit" and reading["resetsAt"] is None


def test_working_and_dialog_come_before_limit_and_limit_before_waiting():
    profile = TermProfile(dict(TERM, working=r"esc to interrupt"))
    assert profile.judge(SCREEN + ["esc to interrupt"], True)["state"] == "working"
    assert profile.judge(["Do you trust this?"] + SCREEN, True)["waitingFor"] == "dialog"
    assert profile.judge(["> "], True)["waitingFor"] == "question"


def test_the_reading_is_counted_from_now_by_default():
    before = int(time.time() * 1000)
    reading = TermProfile(TERM).judge(["You've hit your limit · resets in 2h", "> "], True)
    assert before + 7_200_000 <= reading["resetsAt"] <= int(time.time() * 1000) + 7_200_000
