"""Notify-once and reminders (roost.notify.notifier), replayed: rows in, on a clock that
moves only when told (roost.clock.ManualClock), and the notes pushed out."""

import pytest

from roost.clock import ManualClock
from roost.notify.notifier import Notifier, SETTLE_S


class Settings:
    def __init__(self, **notify):
        self.value = {"notify": dict({"desktop": False}, **notify)}

    def get(self, key, default=None):
        return self.value.get(key, default)


def notifier(clock, **notify):
    pushed = []
    told = Notifier(Settings(**notify), pushed.append, attached=lambda job_id: False, board_task=lambda _: None,
                    clock=clock)
    return told, pushed


def asks(since, question="Which file?", **fields):
    return dict({"id": "j1", "name": "asker", "state": "blocked", "status": "waiting", "waitingFor": "question",
                 "question": question, "stateSince": since}, **fields)


def working(since):
    return {"id": "j1", "name": "asker", "state": "working", "status": None, "waitingFor": None,
            "stateSince": since}


def titles(pushed):
    return [(message["note"]["title"], message["note"]["reminder"]) for message in pushed]


def replay(history, clock, told):
    """Each step: ("row", row) into the notifier, or ("wait", ms) of time going by."""
    for what, value in history:
        if what == "row":
            told.row_changed(value, None)
        else:
            clock.advance(value)


SETTLE_MS = int(SETTLE_S * 1000)


def test_a_question_is_told_once_after_it_settles_and_reminded_once():
    clock = ManualClock()
    told, pushed = notifier(clock, reminderMinutes=15)
    start = clock.now_ms()
    replay([("row", asks(start)), ("wait", SETTLE_MS - 1)], clock, told)
    assert pushed == []                                     # not yet settled
    replay([("wait", 1), ("row", asks(start, summary="still the same wait")), ("wait", 60_000)], clock, told)
    assert titles(pushed) == [("roost: asker asks", False)]
    replay([("wait", 15 * 60_000)], clock, told)
    assert titles(pushed) == [("roost: asker asks", False), ("roost: asker asks (still waiting)", True)]
    replay([("wait", 60 * 60_000)], clock, told)
    assert len(pushed) == 2                                 # one reminder, never more
    assert pushed[0]["note"]["at"] == start + SETTLE_MS     # told at the clock's time


def test_a_wait_that_ends_before_it_settles_is_never_told():
    clock = ManualClock()
    told, pushed = notifier(clock)
    start = clock.now_ms()
    replay([("row", asks(start)), ("wait", SETTLE_MS // 2), ("row", working(start + 500)), ("wait", 60_000)],
           clock, told)
    assert pushed == [] and clock.pending() == []


def test_an_answered_question_cancels_its_reminder_and_a_new_one_is_told_again():
    clock = ManualClock()
    told, pushed = notifier(clock, reminderMinutes=1)
    start = clock.now_ms()
    replay([("row", asks(start)), ("wait", 5_000), ("row", working(start + 5_000)), ("wait", 120_000)], clock, told)
    assert titles(pushed) == [("roost: asker asks", False)]
    again = clock.now_ms()
    replay([("row", asks(again, question="And now?")), ("wait", 5_000)], clock, told)
    assert titles(pushed) == [("roost: asker asks", False), ("roost: asker asks", False)]
    assert pushed[1]["note"]["body"] == "And now?"


def test_a_wait_told_before_the_daemon_started_is_not_told_again():
    clock = ManualClock()
    told, pushed = notifier(clock)
    row = asks(clock.now_ms() - 60_000)
    told.seed(row)
    replay([("row", row), ("wait", 600_000)], clock, told)
    assert pushed == []


@pytest.mark.parametrize("row, kind", [
    (asks(0, waitingFor="dialog", question="Allow?"), "dialog"),
    (asks(0, waitingFor="limit", resetsAt=None), "limit"),
    ({"id": "j1", "name": "asker", "state": "failed", "error": "exit 2", "stateSince": 0}, "failure"),
])
def test_each_need_is_told_as_its_kind_and_only_a_question_is_reminded(row, kind):
    clock = ManualClock()
    told, pushed = notifier(clock, reminderMinutes=1)
    replay([("row", row), ("wait", 10 * 60_000)], clock, told)
    assert [message["note"]["kind"] for message in pushed] == [kind]


def test_a_kind_turned_off_is_not_told():
    clock = ManualClock()
    told, pushed = notifier(clock, question=False)
    replay([("row", asks(clock.now_ms())), ("wait", 60_000)], clock, told)
    assert pushed == []
