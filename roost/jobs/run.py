"""A job's run: its program from the spawn to the exit, as explicit states (STYLE 5).

    ended --start--> starting --spawned--> running --stop--> stopping
      ^                 |                     |                 |
      +---- could not spawn ------------------+--- it exited ---+

The run is apart from what the agent says (JobRow.state while it runs: working,
blocked, done, failed, as often as it likes): a protocol agent may report `done` and go
on running, and a run that ends sets the row's end, `stopped` when a stop was under way.
JobRegistry.move is the one mutator of a run: it checks the move, applies it with the
row's fields, persists them and then tells the row's listeners.
"""

import gevent.event

from roost.states import check_table

PHASES = ("ended", "starting", "running", "stopping")
TRANSITIONS = check_table({
    "ended": {"starting"},
    "starting": {"running", "ended"},
    "running": {"stopping", "ended"},
    "stopping": {"ended"},
}, PHASES)


class RunRefused(Exception):
    pass


class Run:
    """The daemon's own view of a job's current run (its record holds the lasting part:
    pid while it runs, endedAt and exit after)."""

    __slots__ = ("phase", "pid", "exit", "reaping", "early_exit", "ended")

    def __init__(self, pid=None):
        self.phase = "running" if pid is not None else "ended"
        self.pid = pid              # the pid of the run the terminal belongs to
        self.exit = None            # the keeper's exit fields, once the program exited
        self.reaping = False        # the stop under way is for idleness (DM-4)
        self.early_exit = None      # an exit told while its start was being recorded
        self.ended = gevent.event.Event()   # set while no run is in progress
        if pid is None:
            self.ended.set()

    @property
    def active(self):
        """A program runs, or is being started or stopped."""
        return self.phase != "ended"

    def check(self, phase):
        if phase not in TRANSITIONS.get(self.phase, ()):
            raise RunRefused(f"a run cannot go from {self.phase} to {phase}")

    def enter(self, phase, reaping=False):
        """Only JobRegistry.move calls this; it sets `ended` once the end is recorded."""
        self.check(phase)
        self.phase = phase
        if phase != "ended":
            self.ended.clear()
        if phase == "starting":
            self.exit = self.early_exit = None
        if phase == "stopping":
            self.reaping = reaping
