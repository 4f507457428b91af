"""The people attached to one job's terminal, as its pump sees them.

Each attacher is a sink: `write_output(bytes)` must not block (returning False means it
fell behind and is let go), `end(why)`, when it has one, hears that it was let go. An
attacher's terminal stays on roost's own alternate screen for the whole attach, so the
job's own screen switches are taken out of the stream (the Terminal repaints after the
job leaves its alternate screen).
"""

import logging
import re

log = logging.getLogger(__name__)

_ALT_SWITCH = re.compile(rb"\x1b\[\?(?:1049|1047|47)([hl])")


def _alt_replacement(match):
    return b"\x1b[H\x1b[2J" if match.group(1) == b"h" else b""


class Attachers:
    def __init__(self, job_id):
        self.job_id = job_id
        self._sinks = []

    def __len__(self):
        return len(self._sinks)

    def __bool__(self):
        return bool(self._sinks)

    def add(self, sink, first):
        """Joins `sink`, which gets `first` (the repaint) before anything else."""
        if self._deliver(sink, first):
            self._sinks.append(sink)

    def remove(self, sink):
        if sink in self._sinks:
            self._sinks.remove(sink)

    def live_output(self, data):
        if b"\x1b[?" in data:
            data = _ALT_SWITCH.sub(_alt_replacement, data)
        self.send(data)

    def send(self, data):
        for sink in list(self._sinks):
            if not self._deliver(sink, data):
                self.remove(sink)
                _end(sink, "the attacher fell behind")

    def end_all(self, why):
        sinks, self._sinks = self._sinks, []
        for sink in sinks:
            _end(sink, why)

    def _deliver(self, sink, data):
        try:
            return sink.write_output(data) is not False
        except Exception:
            log.exception("job %s: an attacher failed", self.job_id)
            return False


def _end(sink, why):
    end = getattr(sink, "end", None)
    if end is not None:
        try:
            end(why)
        except Exception:
            log.exception("an attacher's end failed")
