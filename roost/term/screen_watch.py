"""A job's screen as rows of text, for a watcher that draws it itself (a page of `roost
web`): the rows as they stand, then only the rows that changed, at most one frame every
FRAME_S while output comes, nothing while the job is quiet.

A watcher is not an attacher: it has no terminal, so it answers none of the job's
queries, holds no draft and keeps the screen from nothing (Terminal.attach would make
the daemon stop answering the job's queries itself). It reads the screen the daemon
keeps (roost.term.screen), woken by the Terminal's own change signal (`wait_for`).
"""

import logging

import gevent

log = logging.getLogger(__name__)

FRAME_S = 0.03      # changes within this are sent as one frame
REST_S = 60.0       # a wait on a quiet screen wakes this often to see the watcher is wanted


def snapshot(screen):
    """{rows, cols, lines, cursor} of a Screen as it stands."""
    return {"rows": screen.rows, "cols": screen.cols, "lines": screen.lines(), "cursor": list(screen.cursor)}


class ScreenWatch:
    """One watcher of one terminal: `send(frame)` gets {lines: {row: text}, cursor,
    rows, cols} for each change, and {ended: true} once the job's terminal is done."""

    def __init__(self, terminal, send):
        self.terminal = terminal
        self.send = send
        self.stopped = False
        self._last = None
        self._greenlet = None

    def first(self):
        """The screen as it stands (the watch's answer); frames follow from here."""
        self.terminal.catch_up()
        self._last = snapshot(self.terminal.screen)
        return dict(self._last)

    def start(self):
        self._greenlet = gevent.spawn(self._run)
        return self

    def release(self):
        """The watcher leaves (screen-stop, its connection closed)."""
        self.stopped = True
        greenlet, self._greenlet = self._greenlet, None
        if greenlet is not None and greenlet is not gevent.getcurrent():
            greenlet.kill(block=False)

    def _run(self):
        try:
            while not self.stopped:
                self._next_change()
                if self.stopped:
                    return
                gevent.sleep(FRAME_S)
                self._send_frame()
                if self.terminal.finished:
                    self.send({"ended": True})
                    return
        except Exception:
            log.exception("job %s: a screen watch failed", self.terminal.job_id)

    def _next_change(self):
        woken = [False]

        def after_a_wake():
            seen, woken[0] = woken[0], True
            return seen

        self.terminal.wait_for(after_a_wake, REST_S)

    def _send_frame(self):
        now = snapshot(self.terminal.screen)
        last = self._last
        resized = (now["rows"], now["cols"]) != (last["rows"], last["cols"])
        changed = {str(row): text for row, text in enumerate(now["lines"])
                   if resized or row >= len(last["lines"]) or last["lines"][row] != text}
        if not changed and now["cursor"] == last["cursor"]:
            return
        self._last = now
        self.send({"lines": changed, "cursor": now["cursor"], "rows": now["rows"], "cols": now["cols"]})
