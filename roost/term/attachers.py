"""The people attached to one job's terminal, as its pump sees them.

Each attacher is a sink: `write_output(bytes)` must not block (returning False means it
fell behind and is let go), `end(why)`, when it has one, hears that it was let go. An
attacher's terminal stays on roost's own alternate screen for the whole attach, so the
job's own screen switches are taken out of the stream (the Terminal repaints after the
job leaves its alternate screen).

The job's terminal queries (cursor position, device attributes, colours) reach every
attacher, and each one's terminal answers: the job must hear one answer, not one per
attacher. The attacher that joined first answers; the answers in the others' input are
taken out (`without_reports`).
"""

import logging
import re

log = logging.getLogger(__name__)

_ALT_SWITCH = re.compile(rb"\x1b\[\?(?:1049|1047|47)([hl])")
# What a terminal sends back, never a key: cursor position (CSI r;c R), device attributes
# (CSI ? / > / = ... c), status (CSI n), window reports (CSI ... t), mode reports
# (CSI ? ... $ y), keyboard flags (CSI ? flags u), OSC answers (colours) and DCS answers.
_REPORT = re.compile(rb"\x1b\[(?:\d+;\d+R|[?>=][\d;]*c|\d*n|[\d;]*t|\?[\d;]*\$y|\?\d*u)"
                     rb"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"
                     rb"|\x1bP[^\x1b]*\x1b\\")
_PASTE_START = b"\x1b[200~"


def live_view(data):
    """The job's output as an attacher's terminal gets it: without its screen switches."""
    if b"\x1b[?" in data:
        data = _ALT_SWITCH.sub(_alt_replacement, data)
    return data


def without_reports(data):
    """`data` (an attacher's input) with its terminal's answers taken out. A chunk that
    holds a bracketed paste is left whole: what is pasted is the user's, escapes and all."""
    if b"\x1b" not in data or _PASTE_START in data:
        return data
    return _REPORT.sub(b"", data)


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

    def answers_queries(self, sink):
        """Whether `sink`'s terminal is the one that answers the job's queries."""
        return bool(self._sinks) and self._sinks[0] is sink

    def remove(self, sink):
        if sink in self._sinks:
            self._sinks.remove(sink)

    def live_output(self, data):
        self.send(live_view(data))

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
