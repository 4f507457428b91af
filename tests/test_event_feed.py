"""The bus and its feed in one process: the feed's log kept open across batches and
opened again after a compaction replaced it, every seq kept. A real feed on a temp
home, its appends through gevent's threadpool as in the daemon."""

import pytest

from roost import blocking
from roost.events.bus import EventBus
from roost.events.feed import EventFeed


@pytest.fixture
def bus(tmp_path):
    blocking.use_threadpool()
    try:
        feed = EventFeed(str(tmp_path))
        yield EventBus(feed)
    finally:
        blocking._run = None


def test_the_feed_keeps_its_log_open_and_reopens_it_after_a_compaction(bus, tmp_path):
    for number in range(2100):           # a compaction at the last batch: past 2000 lines
        bus.publish("state", f"event {number}")
        if number % 300 == 0:
            bus.flush()
    bus.flush()
    for number in range(2100, 2110):     # appended to the file the compaction wrote
        bus.publish("state", f"event {number}")
        bus.flush()
    again = EventFeed(str(tmp_path))
    again.load()
    assert [event["seq"] for event in again.events] == list(range(1111, 2111))
    assert [event["seq"] for event in bus.feed.events] == list(range(1111, 2111))
    assert again.events[-1]["text"] == "event 2109"
