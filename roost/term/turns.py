"""The loop's turns for jobs' readers that have more to do (issue 21: a daemon adopting
200 jobs, 20 of them flooding, holds its loop as little as it can).

A reader with more output waiting used to come back on the loop's next turn, every one
of them: with 20 floods, each read (the pty's bytes spliced to the log and read back,
about 0.3 ms in the kernel alone) and its screen's slice made one turn of the loop
30-50 ms long on a busy machine, and a request on another connection waited for all of
it. Readers now wait in one queue, served in the order they came, within TURN_BUDGET
of a turn: those not served wait at the head for the next turn, so every flood is read
in its order (its program waits meanwhile on a full pty: nothing it prints is lost),
and a lone flood, alone in the queue, is read every turn as fast as before.
"""

import collections
import time

import gevent
from gevent.hub import Waiter

TURN_BUDGET = 0.004           # seconds of readers' work in one turn of the loop
REST = 1.0                    # after a turn that could not serve them all: a rest this long
                              # (times the turn's length) before the next


class Turns:
    """Served from a check watcher, which libev runs after every poll whatever else is
    pending; an idle watcher beside it only keeps the poll from blocking while callers
    wait. Served from the idle watcher alone, the turns starved as long as anything
    else was pending on every turn (a greenlet yielding with gevent.sleep(0) through a
    long file, say): not one reader was served meanwhile (measured: 0 of 24 turns)."""

    __slots__ = ("_queue", "_watcher", "_spinner", "_rest")

    def __init__(self):
        self._queue = collections.deque()
        self._watcher = None
        self._spinner = None
        self._rest = None

    def wait(self):
        """Returns on a later turn of the loop, when this caller's turn comes."""
        waiter = Waiter()
        self._queue.append(waiter)
        if self._watcher is None:
            loop = gevent.get_hub().loop
            self._watcher = loop.check()
            self._spinner = loop.idle()
        if not self._watcher.active and not (self._rest is not None and self._rest.active):
            self._start()
        waiter.get()

    def _start(self):
        self._watcher.start(self._serve)
        self._spinner.start(_no_op)

    def _stop(self):
        self._watcher.stop()
        self._spinner.stop()

    @property
    def waiting(self):
        return len(self._queue)

    def _serve(self):
        """Run by the hub once a turn: wakes the callers that were waiting when the turn
        began, in order, while the budget lasts (each runs until it waits again)."""
        queue = self._queue
        started = time.perf_counter()
        deadline = started + TURN_BUDGET
        due = len(queue)
        for served in range(1, due + 1):
            queue.popleft().switch(None)
            if time.perf_counter() >= deadline:
                break
        if not queue:
            self._stop()
        elif served < due:
            # More readers than a turn holds, each with more to do: floods. Reading them
            # without a rest keeps them running too, and on a machine of few cores
            # their processes then hold the CPU the loop needs (runqueue waits of
            # 20-30 ms, measured). They wait on their full ptys meanwhile.
            self._stop()
            if self._rest is not None:
                self._rest.close()
            self._rest = gevent.get_hub().loop.timer((time.perf_counter() - started) * REST)
            self._rest.start(self._rested)

    def _rested(self):
        if self._queue:
            self._start()


def _no_op():
    pass


turns = Turns()
