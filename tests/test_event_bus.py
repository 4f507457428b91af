"""The bus's held events (issue 21): an event of a durable write is in the feed while the
write runs, and its listeners hear of it only once the write is done, in seq order; a
write that fails leaves it untold, and the feed says that it did not happen. A real
feed on a temp home, its appends through gevent's threadpool as in the daemon."""

import gevent
import gevent.event
import pytest

from roost import store
from roost.events.bus import EventBus
from roost.events.feed import EventFeed


@pytest.fixture
def bus(tmp_path):
    store.use_threadpool()
    try:
        feed = EventFeed(str(tmp_path))
        bus = EventBus(feed)
        bus.heard = []
        bus.listeners.append(lambda event: bus.heard.append((event["kind"], event["text"])))
        yield bus
    finally:
        store._run_blocking = None


def test_a_held_event_is_written_meanwhile_and_told_after_its_write(bus):
    write_may_end = gevent.event.Event()
    written_before_the_end = []

    def reply():
        with bus.during("reply", "reply: hello", "job1", "one"):
            write_may_end.wait(5)
            written_before_the_end.append([event["text"] for event in bus.feed.events])

    worker = gevent.spawn(reply)
    gevent.sleep(0.05)
    bus.publish("state", "working", "job1", "one")       # after it: written and told after it
    gevent.sleep(0.2)
    assert bus.heard == []                               # held: its write has not ended
    write_may_end.set()
    worker.join(5)
    bus.flush()
    assert written_before_the_end == [["reply: hello"]]   # on disk before its write ended
    assert bus.heard == [("reply", "reply: hello"), ("state", "working")]
    assert [event["seq"] for event in bus.feed.events] == [1, 2]


def test_a_held_event_whose_write_fails_is_never_told_and_the_feed_says_so(bus):
    def reply():
        with bus.during("reply", "reply: lost", "job1", "one"):
            gevent.sleep(0.2)                             # the feed's append is done by now
            raise OSError(28, "No space left on device")

    worker = gevent.spawn(reply)
    worker.join(5)
    assert isinstance(worker.exception, OSError)
    bus.publish("state", "working", "job1", "one")
    bus.flush()
    assert bus.heard == [("notice", "not done: reply: lost ([Errno 28] No space left on device)"),
                         ("state", "working")]
    assert [event["text"] for event in bus.feed.events][0] == "reply: lost"


def test_a_held_event_that_fails_before_its_batch_leaves_no_trace(bus):
    def reply():
        with bus.during("reply", "reply: never", "job1", "one"):
            raise ValueError("refused")                  # before the writer ever ran

    worker = gevent.spawn(reply)
    worker.join(5)
    bus.publish("state", "working", "job1", "one")
    bus.flush()
    assert bus.heard == [("state", "working")]
    assert [event["text"] for event in bus.feed.events] == ["working"]


def test_the_feed_keeps_its_log_open_and_reopens_it_after_a_compaction(bus, tmp_path):
    for number in range(2100):
        bus.publish("state", f"event {number}")
        if number % 300 == 0:
            bus.flush()
    bus.flush()
    again = EventFeed(str(tmp_path))
    again.load()
    assert [event["seq"] for event in again.events] == list(range(1101, 2101))
    assert again.events[-1]["text"] == "event 2099"
