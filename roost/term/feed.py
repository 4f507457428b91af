"""What of a job's output its screen gets, and when (issue 3: the daemon's loop never
paused over 10 ms while one job floods, ping p99 under 50 ms while 20 flood).

Feeding pyte is the costly part of output, about 1 ms a KiB. Output waits here for the
screen (at most SCREEN_BACKLOG: past that the screen skips ahead to the tail, while the
log keeps every byte) and goes to it a slice at a time:

- every job's reader with more to do waits for the same turn of the loop, and a request
  on another connection waits for that turn too: all screens together get at most
  FEED_BUDGET of feeding in one turn (`budget`), whichever jobs' turns those are;
- under a flood (output that has kept coming for STREAM_AFTER, faster than it is fed)
  a screen gets a slice only every STALE_SCREEN, is packed small in between (`pack`),
  and catches up from the tail once the flood ends or someone reads the screen.

Only a flood of lines skips ahead: a burst (a full-screen program's repaint, tens of KiB
at once) and output that moves the cursor about (a TUI streaming in place) are fed whole,
a slice a turn, since skipping part of a repaint that only redraws what changed would
leave rows of an older screen standing. A screen that did skip is rebuilt from the log's
tail once its flood ends (`skipped`).
"""

import gc
import re
import time

import gevent
import gevent.socket

SLICE = 1024                  # bytes fed to pyte in one go (about 1 ms)
FEED_BUDGET = 0.002           # seconds of feeding in one turn of the loop, all screens
SCREEN_BACKLOG = 16 * 1024    # more unfed than this under a flood: the screen skips ahead
MAX_BACKLOG = 1024 * 1024     # ... and this much, flood or not
SKIP_TO = 6 * 1024
FLOW_GAP = 0.05               # output after a quiet gap this long starts a new flow
STREAM_AFTER = 0.05           # a flow this long (with a backlog) is a flood
STALE_SCREEN = 0.5            # under a flood a screen gets a slice this often
YOUNG_COLLECTIONS = 4         # see collect_young
# Cursor positioning (CUP, HVP, CUU/CUD/CUF/CUB, CHA, VPA): a program drawing in place.
_POSITIONED = re.compile(rb"\x1b\[[0-9;]*[HfABCDGd]")


class FeedBudget:
    """The feeding every screen shares in one turn of the loop (one poll of its fds)."""

    __slots__ = ("_iteration", "_spent")

    def __init__(self):
        self._iteration = -1
        self._spent = 0.0

    def allows(self):
        iteration = gevent.get_hub().loop.iteration
        if iteration != self._iteration:
            self._iteration = iteration
            self._spent = 0.0
        return self._spent < FEED_BUDGET

    def spend(self, seconds):
        self._spent += seconds


budget = FeedBudget()


def collect_young():
    """pyte makes a tuple per cell it draws (a namedtuple, which the collector never
    untracks) and frees the one it replaces, so the collector's allocation count stays
    low: left to itself it runs seldom and then walks tens of thousands of new cells at
    once (10-25 ms, measured). Collected after every slice the young generations stay
    small: a fraction of a millisecond each time."""
    gc.collect(0)
    if gc.get_count()[1] >= YOUNG_COLLECTIONS:
        gc.collect(1)


class ScreenFeed:
    """The output one screen has not been fed yet, and how output has been flowing."""

    __slots__ = ("screen", "pending", "replayed", "fed_at", "last_output", "flow_since", "skipped")

    def __init__(self, screen):
        self.screen = screen
        self.pending = bytearray()
        self.replayed = 0             # bytes at pending's head that are old output replayed
        self.fed_at = 0.0
        self.last_output = self.flow_since = time.monotonic()
        self.skipped = False          # it skipped ahead since it was last rebuilt

    def replay(self, data):
        """Old output (a log's tail, for a screen taken over after a restart) goes first,
        ahead of what the job prints from now on; it is not a flow of output."""
        self.pending[:0] = data
        self.replayed += len(data)

    def take(self, data):
        now = time.monotonic()
        if now - self.last_output > FLOW_GAP:
            self.flow_since = now
        self.last_output = now
        self.pending += data
        if len(self.pending) > SCREEN_BACKLOG and self._may_skip(now):
            self._skip_ahead()

    def _may_skip(self, now):
        """A flood of lines may skip ahead: its tail shows what its screen would. Output
        that moves the cursor about (a TUI redrawing in place) is fed whole: a skip would
        leave rows of an older screen standing. Past MAX_BACKLOG, anything skips."""
        if len(self.pending) > MAX_BACKLOG:
            return True
        return self.flooding(now) and _POSITIONED.search(self.pending) is None

    def flowing(self, now):
        return now - self.last_output < FLOW_GAP

    def flooding(self, now):
        """Output has kept coming for a while, faster than a slice a turn: a spinner or
        a stream of words is not a flood, a build log is."""
        return (len(self.pending) >= SLICE and self.flowing(now)
                and self.last_output - self.flow_since >= STREAM_AFTER)

    def due(self, urgent=False):
        """A slice may go to the screen now. `urgent`: its reading is out of date (a
        flood's first slice shows it working at once)."""
        if not self.pending:
            return False
        now = time.monotonic()
        if not urgent and self.flooding(now) and now - self.fed_at < STALE_SCREEN:
            return False
        return budget.allows()

    def feed_slice(self):
        """Feeds one slice; True when it was replayed output (its queries were answered
        when they were new)."""
        started = time.perf_counter()
        self.fed_at = time.monotonic()
        replay = self.replayed > 0
        size = min(SLICE, self.replayed) if replay else SLICE
        chunk = bytes(self.pending[:size])
        del self.pending[:size]
        if replay:
            self.replayed -= len(chunk)
        self.screen.feed(chunk)
        collect_young()
        budget.spend(time.perf_counter() - started)
        return replay

    def pack(self):
        """Packs the screen (Screen.freeze) between a flood's slices: a flooding screen
        thawed holds thousands of cells, each an object the collector walks (with 20
        floods a full collection took 15 ms and more) and ~400 KB in all; packed and
        unpacked it costs ~2 ms a slice, a slice every STALE_SCREEN."""
        started = time.perf_counter()
        self.screen.freeze()
        budget.spend(time.perf_counter() - started)

    def _skip_ahead(self):
        tail = self.pending[-SKIP_TO:]
        # Start the tail at a line or a sequence so the gap cuts nothing in half.
        cuts = [index for index in (tail.find(b"\n"), tail.find(b"\x1b")) if 0 <= index < 1024]
        if cuts:
            cut = min(cuts)
            tail = tail[cut + 1:] if tail[cut:cut + 1] == b"\n" else tail[cut:]
        self.replayed = max(0, self.replayed - (len(self.pending) - len(tail)))
        self.pending = bytearray(tail)
        self.screen.skip()
        self.skipped = True


def in_turns(step, idle=None):
    """Calls `step()` (one slice of feeding; it says whether more is owed) whenever the
    shared budget allows, waiting for the loop's next turn in between: other jobs and
    other connections go on meanwhile. `idle`: an idle watcher of the caller's to wait
    on (else one is made for the while)."""
    own = idle is None
    try:
        while True:
            if budget.allows():
                if not step():
                    return
                continue
            if idle is None:
                idle = gevent.get_hub().loop.idle()
            gevent.socket.wait(idle)
    finally:
        if own and idle is not None:
            idle.close()


def feed_in_turns(screen, data, idle):
    """Feeds `data` a slice at a time within the shared budget (`idle`: see in_turns)."""
    offsets = iter(range(0, len(data), SLICE))

    def step():
        offset = next(offsets, None)
        if offset is None:
            return False
        started = time.perf_counter()
        screen.feed(data[offset:offset + SLICE])
        collect_young()
        budget.spend(time.perf_counter() - started)
        return True

    in_turns(step, idle)
