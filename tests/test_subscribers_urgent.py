"""A change a person acts on (a state, what a row waits for, its name) is pushed to the
subscribers on the next turn of the loop; a working row's line is still coalesced (one
push per ROWS_EVERY). In-process, under gevent, with a session that keeps its lines."""

import gevent

from roost import codec
from roost.events.subscribers import Subscribers


class Session:
    gone = False

    def __init__(self):
        self.lines = []

    def on_close(self, callback):
        pass

    def send_line(self, line):
        self.lines.append(codec.decode(line))


def row(**fields):
    return {"id": "a", "state": "working", "waitingFor": None, "status": "busy", "name": "a", "summary": "", **fields}


def test_a_state_change_goes_out_at_once_and_a_line_waits():
    subscribers, session = Subscribers(), Session()
    subscribers.add(session)
    subscribers.row_changed(row(summary="one"), None)           # new: at once
    gevent.sleep(0.005)
    assert [push["rows"][0]["summary"] for push in session.lines] == ["one"]
    subscribers.row_changed(row(summary="two"), row(summary="one"))        # a line: coalesced
    gevent.sleep(0.01)
    assert len(session.lines) == 1
    waiting = row(summary="two", state="blocked", waitingFor="question", status="waiting")
    subscribers.row_changed(waiting, row(summary="two"))        # a state: at once, with what waited
    gevent.sleep(0.005)
    assert len(session.lines) == 2 and session.lines[-1]["rows"][0]["waitingFor"] == "question"
    gevent.sleep(0.3)
    assert len(session.lines) == 2          # the coalesced flush it replaced does not come again
