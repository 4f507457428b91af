"""A job's terminal in the daemon: its pty master, screen, log, attachers and typing.

Output is read by roost.term.pty_reader (no greenlet while the job is quiet) and goes,
every byte, to the job's bounded log and to attachers; the screen gets it through
roost.term.feed, which bounds what feeding it may cost the loop (under a flood it skips
ahead). The quiet screen is judged (roost.term.reading, with the kernel's word), then
packed small (Screen.freeze) until output comes. Writes to the master go through one
writer and never block the loop: a program that stops reading stalls only its job.
"""

import fcntl
import logging
import struct
import termios
import time

import gevent
import gevent.event
import gevent.lock

from roost.term import keys, typist
from roost.term.attachers import Attachers, live_view, without_reports
from roost.term.drafts import Drafts
from roost.term.feed import FLOW_GAP, SLICE, ScreenFeed, budget, feed_in_turns, in_turns
from roost.term.intake import Intake
from roost.term.output_log import OutputLog
from roost.term.pty_reader import MORE, PARK, WAIT, PtyReader
from roost.term.pty_writer import PtyWriter
from roost.term.reading import ScreenReading, shared_profile
from roost.term.screen.screen import Screen

log = logging.getLogger(__name__)

REPLAY_SIZE = 32 * 1024       # log tail replayed into a new Terminal's screen
OUTBOX_LIMIT = 1024 * 1024    # attacher keys waiting for a program that does not read
WRITE_TIMEOUT = 5.0


class Terminal:
    # Hundreds of idle jobs each hold one: slots, and what is needed only while someone
    # types, attaches or waits is made then (writer, attachers, events).
    __slots__ = ("job_id", "fd", "job_dir", "profile", "screen", "on_change", "on_eof", "on_held", "_drafts",
                 "verify_timeout", "write_timeout", "closed", "_log", "_intake", "_reader", "_feed", "_read",
                 "_attachers", "_alt_exits_seen", "_repaint_due", "_changed", "_typing", "_writer_", "_eof",
                 "_at_eof", "_output_seen", "_saw_output")

    def __init__(self, job_id, master_fd, job_dir, term=None, rows=40, cols=120, on_change=None, on_eof=None,
                 log_limit=4 * 1024 * 1024, typed=False, carry=None, probe=None, takes_task=False, clock=None):
        self.job_id = job_id
        self.fd = master_fd
        self.job_dir = job_dir
        self.profile = shared_profile(term)
        self.screen = Screen(rows, cols)
        self.on_change = on_change
        self.on_eof = on_eof
        self.on_held = None      # fn(held) when an attacher's draft starts or ends holding typing
        self._drafts = None
        self.verify_timeout = max(3.0, 2 * self.profile.settle)
        self.write_timeout = WRITE_TIMEOUT
        self.closed = False
        self._log = OutputLog(job_dir, log_limit)
        self._intake = Intake(master_fd, self._log, carry)
        self._reader = PtyReader(self._intake, job_id, self)
        self._feed = ScreenFeed(self.screen)
        self._read = ScreenReading(self.profile, typed, probe, takes_task, clock)   # clock: when to judge
        self._attachers = None
        self._alt_exits_seen = 0
        self._repaint_due = False
        self._changed = None     # an Event while someone waits for a change
        self._typing = None
        self._writer_ = None
        self._eof = None
        self._at_eof = False
        self._output_seen = None
        self._saw_output = False

    @property
    def writer(self):
        if self._writer_ is None:
            self._writer_ = PtyWriter(self.fd, self.job_id, self._wake)
        return self._writer_

    @property
    def eof(self):
        """Set once the program's side of the pty is closed and its output read."""
        if self._eof is None:
            self._eof = gevent.event.Event()
            if self._at_eof:
                self._eof.set()
        return self._eof

    @property
    def output_seen(self):
        if self._output_seen is None:
            self._output_seen = gevent.event.Event()
            if self._saw_output:
                self._output_seen.set()
        return self._output_seen

    # -- the contract ---------------------------------------------------------------------

    def start(self, judge_later=0.0):
        """Reads at once (after a restart from the log's tail); `judge_later`: its first judgement waits."""
        self._read.judge_later(judge_later)
        tail = self._log.replay_tail(REPLAY_SIZE)
        if tail:
            self._feed.replay(tail)
        held = self._intake.held()
        if held:
            self.output(held)
        self._reader.start()
        return self

    @property
    def reading(self):
        return dict(self._read.current)

    @property
    def judged(self):
        """The screen was judged since the last output (it has been quiet settleMs)."""
        return not self._read.unjudged

    @property
    def attached(self):
        return len(self._attachers) if self._attachers is not None else 0

    def text(self, last=None):
        self.catch_up()
        return self.screen.text(last)

    def attach(self, sink):
        """`sink.write_output(bytes)` must not block; returning False drops the sink.
        `sink.end(why)`, when it has one, is told when the terminal lets it go."""
        self.catch_up()
        self._alt_exits_seen = self.screen.alt_exits
        if self._attachers is None:
            self._attachers = Attachers(self.job_id)
        # The screen as fed, then the output it has yet to take, as it came: the
        # attacher's terminal ends up where the screen will.
        self._attachers.add(sink, self.screen.render_ansi() + live_view(bytes(self._feed.pending)))
        return sink

    def detach(self, sink):
        if self._attachers is not None:
            self._attachers.remove(sink)
        if self._drafts is not None and self._drafts.left(sink):
            self._held_changed()
        self._freeze_if_quiet()

    @property
    def held(self):
        """A person's unsubmitted line (roost.term.drafts): roost types nothing meanwhile."""
        return bool(self._drafts)

    def write_input(self, data, sink=None):
        """An attacher's keys; dropped (False) while a stalled program has a backlog.
        Only the first attacher's terminal answers the job's queries (Attachers)."""
        if self.closed or self.writer.backlog > OUTBOX_LIMIT:
            return False
        if sink is not None and self._attachers and not self._attachers.answers_queries(sink):
            data = without_reports(data)
        if sink is not None and data:
            drafts = self._drafts = self._drafts if self._drafts is not None else Drafts()
            if drafts.typed(sink, data):
                self._held_changed()
        if data:
            if self._read.keys_given():      # what its processes wait on may change: look soon
                self._reader.look_soon()
            self.writer.enqueue(bytes(data))
        return True

    def send_keys(self, names):
        """Keys by name (roost.term.keys), written as a person's terminal would send
        them; False when a stalled program has a backlog. UnknownKey for a bad name."""
        data = b"".join(keys.key_bytes(name, self.screen.application_cursor) for name in names)
        return self.write_input(data)

    def resize(self, rows, cols):
        if self.closed:
            return
        try:
            fcntl.ioctl(self.fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        except OSError as error:
            log.info("job %s: resize failed: %s", self.job_id, error)
        self.catch_up()
        self.screen.resize(rows, cols)
        self._freeze_if_quiet()
        self._wake()

    def type_text(self, text, mode="followUp", timeout=None, still=None, on_submit=None):
        """Types `text` and the submit keys, then checks the text left the input line
        (roost.term.typist, handed a Keyboard: what typing needs of this terminal); one
        typing at a time. followUp waits (up to `timeout` s, None: as long as the job lives)
        until the screen is judged not working; steer types at once. `still`: what must
        hold once this typing's turn has come, else nothing is typed (`ready: False`).
        `on_submit`: called once the program took the submit keys."""
        if self._typing is None:
            self._typing = gevent.lock.Semaphore()
        with self._typing:
            if self.held:
                return {"submitted": False, "ready": False, "error": "the user is typing"}
            if still is not None and not still():
                return {"submitted": False, "ready": False, "error": "the screen no longer waits for text"}
            keyboard = typist.Keyboard(self.screen, self.writer, self.profile.submit, self.wait_for,
                                       lambda: self._read.current["state"] == "working", lambda: self.finished,
                                       self.catch_up, self.verify_timeout, self.write_timeout)
            result = typist.type_text(keyboard, text, mode, timeout, on_submit)
        if result["submitted"]:
            self._set_reading(self._read.text_given(self.screen.lines()))
        return result

    def typed_not_submitted(self, text):
        """Typed, and its submit keys never came (a daemon that died in between)."""
        quiet = self.judged and self._read.current.get("state") != "working"
        return quiet and typist.pending_on_input_line(self.screen.lines(), self.screen.cursor, text)

    @property
    def typing(self):
        """Something is being typed, or waits for its turn to type."""
        return self._typing is not None and self._typing.locked()

    def close(self):
        if self.closed:
            return
        self.closed = True
        self._reader.close()
        if self._writer_ is not None:
            self._writer_.close()
        if self._attachers is not None:
            self._attachers.end_all("the job's terminal closed")
        self._drop_drafts()
        self._log.close()
        self._intake.close()      # the master and the carry pipe
        # Packed, its cells go now: left to the collector (a closed terminal is held in
        # reference cycles) thousands of them would be freed in one long pause later.
        self.screen.freeze()
        self._wake()

    # -- output (the reader's owner) ------------------------------------------------------

    def output(self, data):
        """`data` is in the log already (the intake put it there)."""
        if not self._saw_output:
            self._saw_output = True
            if self._output_seen is not None:
                self._output_seen.set()
        if self._attachers:
            self._attachers.live_output(data)
        self._feed.take(data)

    def next_step(self, got_output):
        feed = self._feed
        now = time.monotonic()
        if feed.due(urgent=self._read.current["status"] != "busy"):
            self._feed_slice()
            if feed.flooding(now) and not self._attachers:
                feed.pack()       # its next slice is STALE_SCREEN away
        if self._read.probe_due():
            self._judge(again=True)      # output under a reading the kernel gave: asked again
        if got_output or (feed.pending and not feed.flooding(now)):
            return MORE, None
        if feed.pending or feed.flowing(now):
            return WAIT, FLOW_GAP     # the flood goes on; its screen's next slice waits
        if feed.skipped:
            self._rebuild()
        left = self._read.settle_left()
        if left is not None and left > 0:
            return PARK, left
        if left is not None or self._read.recheck_left() == 0:
            self._judge(again=left is None)    # judged once settled, then looked at again
        return PARK, self._read.recheck_left()

    def drain_step(self):
        """After EOF: the screen takes the rest of the output, a slice a turn."""
        if self._feed.pending and budget.allows():
            self._feed_slice()
        return bool(self._feed.pending)

    def ended(self):
        self.catch_up()
        self._at_eof = True
        if self._eof is not None:
            self._eof.set()
        if self._attachers is not None:
            self._attachers.end_all("the job ended")
        self._drop_drafts()
        self._wake()
        if self.on_eof is not None:
            try:
                self.on_eof()
            except Exception:
                log.exception("job %s: on_eof failed", self.job_id)

    # -- the screen -----------------------------------------------------------------------

    def _feed_slice(self):
        replayed = self._feed.feed_slice()
        answers = self.screen.answers()   # replayed queries were answered when they were new
        if answers and not replayed and not self._attachers:
            # With an attacher its own terminal answers; answering too would answer twice.
            self.writer.enqueue(answers)
        if self.screen.alt_exits != self._alt_exits_seen:
            self._alt_exits_seen = self.screen.alt_exits
            self._repaint_due = bool(self._attachers)
        if self._repaint_due and not self._feed.pending:
            self._repaint_due = False
            self._attachers.send(self.screen.render_ansi())
        if self.screen.take_change():
            self._set_reading(self._read.changed(self.screen.lines))
        self._wake()

    def catch_up(self):
        """Feeds the backlog (at most SCREEN_BACKLOG) before the screen is read, a slice
        a turn of the loop within the shared budget: a peek during a flood must not hold
        every other connection for the ~16 ms a whole backlog takes. What comes
        meanwhile is left to the reader (under a flood the backlog never empties)."""
        feed = self._feed
        if gevent.getcurrent() is gevent.get_hub():
            while feed.pending:
                self._feed_slice()
            return
        owed = [len(feed.pending)]

        def step():
            if owed[0] <= 0 or not feed.pending:
                return False
            self._feed_slice()
            owed[0] -= SLICE
            return True

        in_turns(step)

    def _judge(self, again=False):
        read = self._read.recheck if again else self._read.judge     # again: ScreenReading.recheck
        self._set_reading(read(self.screen.lines(), self.screen.cursor[0]))
        self._freeze_if_quiet()

    def _freeze_if_quiet(self):
        """Quiet, judged and nobody attached: its cells packed small until output comes (Screen.freeze)."""
        if not self._read.unjudged and not self._attachers and not self._feed.pending and not self.closed:
            self.screen.freeze()

    def _rebuild(self):
        """A flood made the screen skip ahead: it is rebuilt from the log's tail (no skipped row stays)."""
        self._feed.skipped = False
        self.screen.rebuild()
        tail = self._log.replay_tail(REPLAY_SIZE)
        if tail:
            feed_in_turns(self.screen, tail, None)
            self.screen.answers()
        if self.screen.take_change():
            self._set_reading(self._read.changed(self.screen.lines))

    # -- readings and waiting -------------------------------------------------------------

    def _set_reading(self, reading):
        if reading is None or reading == self._read.current:
            return
        self._read.current = reading
        self._wake()
        if self.on_change is not None:
            try:
                self.on_change(dict(reading))
            except Exception:
                log.exception("job %s: on_change failed", self.job_id)

    def _drop_drafts(self):
        if self._drafts is not None and self._drafts.clear():
            self._held_changed()

    def _held_changed(self):
        self._wake()     # a typing that waits for the hold to end looks again
        if self.on_held is not None:
            self.on_held(self.held)      # it only spawns (the runner's hooks)

    def _wake(self):
        changed, self._changed = self._changed, None
        if changed is not None:
            changed.set()

    def wait_for(self, predicate, timeout=None):
        """Waits until `predicate()` holds, the terminal ended (with its output fed), or
        `timeout` seconds (None: no end) passed; returns whether it holds. Woken by each
        change of the screen, its reading, its writing or its end."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not predicate():
            if self.finished and not self._feed.pending:
                return predicate()
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                return False
            if self._changed is None:
                self._changed = gevent.event.Event()
            self._changed.wait(remaining)
        return True

    @property
    def finished(self):
        """Closed, or the program's side of the pty is gone."""
        return self.closed or self._at_eof
