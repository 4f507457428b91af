"""What a person would see on a job's terminal.

Two pyte screens (main and alternate) under roost's own escape parser
(roost.escape_parser): pyte has no alternate screen, so DECSET 47/1047/1049 switch
between the two here, and the main screen comes back intact when a full-screen program
leaves. Queries a program sends its terminal (cursor position, device attributes,
colours) are answered as a terminal of this size would; `answers()` hands the bytes to
whoever writes them back to the program.
"""

import codecs
import copy
import logging
import re

from roost.term.screen import answers, csi
from roost.term.screen.changes import RowFingerprints, row_text
from roost.term.screen.compact import pack, packed_lines, unpack
from roost.term.screen.escape_parser import EscapeParser
from roost.term.screen.pyte_screen import (
    new_pyte_screen,
    own_defaults,
    resize_pyte_screen,
    share_defaults,
)
from roost.term.screen.render import render_screen

log = logging.getLogger(__name__)

# DECSET modes a terminal keeps for its input, re-sent to an attacher on join.
INPUT_MODES = (1, 1000, 1002, 1003, 1004, 1006, 2004)
ALT_MODES = (47, 1047, 1049)
BRACKETED_PASTE = 2004
# Rows or columns a screen may have, wherever a size comes in (dispatch, spawn, attach,
# attach-resize): a screen's memory grows with rows x cols (65535 columns took 900 MB).
MAX_SIZE = 1000


# Zero-width characters that combine with nothing: variation selectors, joiners, marks.
_ZERO_WIDTH = re.compile("[\u200b-\u200f\u2060-\u2064\ufe00-\ufe0f\ufeff]")
_DEFAULT_MODES = {25: True, 7: True}   # shared; a screen copies it before its first change
_DECODER = codecs.getincrementaldecoder("utf-8")

class Screen:
    # Hundreds of idle jobs each hold one: slots, and an idle screen keeps only what it
    # shows (see freeze).
    __slots__ = ("rows", "cols", "title", "alt_exits", "_answers", "_modes", "_main", "_alt",
                 "_active", "_packed", "_decoder", "_parser", "_seen")

    def __init__(self, rows, cols):
        self.rows = rows
        self.cols = cols
        self.title = ""
        self.alt_exits = 0      # counts returns to the main screen (an attacher repaints)
        self._answers = []
        self._modes = _DEFAULT_MODES     # private modes as last set or reset (copied on write)
        self._main = new_pyte_screen(rows, cols)
        self._alt = None        # made when a program first enters it (most never do)
        self._active = self._main
        self._packed = None     # (main, alt) cells while frozen
        self._decoder = None    # made on the first feed, dropped while frozen at rest
        self._parser = None
        self._seen = None       # each row's text as take_change last saw it (fingerprints)

    # -- input -------------------------------------------------------------------------

    def feed(self, data):
        """Feeds raw output; a UTF-8 sequence split across calls is joined."""
        if self._decoder is None:
            self._decoder = _DECODER(errors="replace")
        text = self._decoder.decode(data)
        if not text:
            return
        self._thaw()
        if self._parser is None:
            self._parser = EscapeParser(self)
        try:
            self._parser.feed(text)
        except Exception:
            # pyte asserts on some odd inputs; a bad sequence must not stop the screen.
            log.debug("screen: sequence failed, parser reset", exc_info=True)
            self._parser.reset()

    def skip(self):
        """Forget a half-read sequence: the next bytes start afresh (after a gap)."""
        self._decoder = None
        self._parser = None

    def answers(self):
        """The bytes to write back to the program for its queries since the last call."""
        if not self._answers:
            return b""
        data = "".join(self._answers).encode("utf-8")
        self._answers.clear()
        return data

    def resize(self, rows, cols):
        self._thaw()
        self.rows, self.cols = rows, cols
        for screen in self._screens():
            resize_pyte_screen(screen, rows, cols)
        self._seen = None

    def reset(self):
        self._packed = None
        self._main.reset()
        self._alt = None
        self._active = self._main
        self._modes = _DEFAULT_MODES
        self._seen = None
        self.skip()

    def rebuild(self):
        """Fresh cells for a tail of output to be fed again (after the screen skipped
        ahead): the modes and which screen shows are kept."""
        alternate = self.in_alternate
        self._packed = None
        self._main = new_pyte_screen(self.rows, self.cols)
        self._alt = new_pyte_screen(self.rows, self.cols) if alternate else None
        self._active = self._alt if alternate else self._main
        self._seen = None
        self.skip()

    def _screens(self):
        return (self._main,) if self._alt is None else (self._main, self._alt)

    # -- idle ------------------------------------------------------------------------------

    def freeze(self):
        """Packs the cells away (screen_compact) while nothing is fed; reading the text
        still works, and the next feed unpacks them. What every screen has alike (tab
        stops, modes) is shared meanwhile, and a parser at rest is let go."""
        if self._packed is not None:
            return
        alt = self._alt
        self._packed = (pack(self._main.buffer, self.cols),
                        pack(alt.buffer, self.cols) if alt is not None else None)
        for screen in self._screens():
            screen.buffer.clear()
            share_defaults(screen)
        if self._modes == _DEFAULT_MODES:
            self._modes = _DEFAULT_MODES
        if self._parser is not None and self._parser.at_rest and self._decoder.getstate()[0] == b"":
            self._decoder = self._parser = None

    @property
    def frozen(self):
        return self._packed is not None

    def _thaw(self):
        if self._packed is None:
            return
        (main, alt), self._packed = self._packed, None
        for screen in self._screens():
            own_defaults(screen)
        unpack(main, self._main.buffer)
        if alt is not None:
            unpack(alt, self._alt.buffer)

    # -- what it shows -----------------------------------------------------------------

    @property
    def in_alternate(self):
        return self._active is not self._main

    @property
    def cursor(self):
        return (self._active.cursor.y, self._active.cursor.x)

    @property
    def bracketed_paste(self):
        return self._modes.get(BRACKETED_PASTE, False)

    @property
    def application_cursor(self):
        """DECCKM: the program asked for the arrows' application form (ESC O A)."""
        return self._modes.get(1, False)

    def take_change(self):
        """Whether what the screen shows changed since the last call: the text of a row
        it touched, or which of its two screens shows. A repaint of the same text, a new
        window title or a cursor that moved is no change: a program that redraws itself
        while it waits still waits."""
        active = self._active
        touched = active.dirty.take()
        if self._seen is None or self._seen.screen is not active:
            self._seen = RowFingerprints(active, self.lines())
            return True
        return self._seen.changed(touched, self.cols)

    def lines(self):
        """Every row as text, right-trimmed (the stub after a wide character is empty)."""
        if self._packed is not None:
            return packed_lines(self._packed[1 if self.in_alternate else 0], self.rows)
        buffer, cols = self._active.buffer, self.cols
        return [row_text(buffer.get(y), cols) for y in range(self.rows)]

    def text(self, last=None):
        rows = self.lines()
        while rows and not rows[-1]:
            rows.pop()
        if last is not None:
            rows = rows[-last:] if last > 0 else []
        return "\n".join(rows)

    def render_ansi(self):
        """Bytes that repaint this screen on a real terminal (for an attacher joining)."""
        self._thaw()
        input_modes = [mode for mode in INPUT_MODES if self._modes.get(mode)]
        return render_screen(self._active, self.rows, self.cols, input_modes,
                             cursor_visible=self._modes.get(25, True))

    # -- the parser's handler ----------------------------------------------------------

    def draw(self, text):
        if _ZERO_WIDTH.search(text) is not None:
            # pyte drops the rest of a run after a zero-width character that does not
            # combine (U+FE0F after an emoji, a joiner): they take no cell, so they go.
            text = _ZERO_WIDTH.sub("", text)
        self._active.draw(text)

    def control(self, char):
        screen = self._active
        if char == "\n" or char == "\x0b" or char == "\x0c":
            screen.linefeed()
        elif char == "\r":
            screen.carriage_return()
        elif char == "\x08":
            screen.backspace()
        elif char == "\t":
            screen.tab()

    def escape(self, final, intermediates):
        screen = self._active
        if intermediates:
            if intermediates == "#" and final == "8":
                screen.alignment_display()
            return   # charset designations: UTF-8 only
        if final == "7":
            screen.save_cursor()
        elif final == "8":
            screen.restore_cursor()
        elif final == "D":
            screen.index()
        elif final == "E":
            screen.carriage_return()
            screen.index()
        elif final == "M":
            screen.reverse_index()
        elif final == "H":
            screen.set_tab_stop()
        elif final == "c":
            self.reset()

    def osc(self, text, terminator):
        code, _, rest = text.partition(";")
        if code in ("0", "2"):
            self.title = rest[:256]
        elif code in ("10", "11", "12") and rest == "?":
            colour = answers.BACKGROUND if code == "11" else answers.FOREGROUND
            self._answers.append(f"\x1b]{code};{colour}{terminator}")
        elif code == "4":
            self._answers.extend(answers.palette(rest, terminator))

    def string(self, kind, text):
        pass   # DCS, APC, PM, SOS: swallowed so their bodies are not drawn

    def csi(self, final, params, prefix, intermediates):
        try:
            csi.handle(self, self._active, final, params, prefix, intermediates)
        except Exception:
            # A sequence pyte cannot take (odd parameters) is dropped, the rest goes on.
            log.debug("screen: CSI %r %r %r failed", prefix, params, final, exc_info=True)

    # -- modes and the alternate screen --------------------------------------------------

    def answer(self, text):
        self._answers.append(text)

    @property
    def modes(self):
        return self._modes

    def answer_status(self, what, private):
        answer = answers.status(what, private, self._active, self.cols, self._modes.get(6))
        if answer is not None:
            self._answers.append(answer)

    def set_private_modes(self, modes, on):
        passed = []
        for mode in modes:
            if mode in ALT_MODES:
                self._switch_screen(mode, on)
                continue
            if mode == 3:
                continue   # DECCOLM: the job keeps the size its pty has
            self._set_mode_flag(mode, on)
            passed.append(mode)
        if passed:
            screen = self._active
            (screen.set_mode if on else screen.reset_mode)(*passed, private=True)

    def _set_mode_flag(self, mode, on):
        if self._modes is _DEFAULT_MODES:
            self._modes = dict(_DEFAULT_MODES)
        self._modes[mode] = on

    def _switch_screen(self, mode, on):
        if on and self._alt is None:
            self._alt = new_pyte_screen(self.rows, self.cols)
        main, alt = self._main, self._alt
        if on:
            if mode == 1049 and self._active is main:
                main.save_cursor()
            if self._active is main:
                alt.cursor = copy.copy(main.cursor)
                alt.mode = set(main.mode)
                alt.margins = None
                self._active = alt
            if mode == 1049:
                alt.erase_in_display(2)
            self._set_mode_flag(mode, True)
            return
        self._set_mode_flag(mode, False)
        if self._active is not alt:
            return
        if mode == 1047:
            alt.erase_in_display(2)
        main.mode = set(alt.mode)
        if mode == 1049:
            main.restore_cursor()
        else:
            # 47 and 1047 share one cursor between the screens, as xterm does.
            main.cursor.x = min(alt.cursor.x, self.cols - 1)
            main.cursor.y = min(alt.cursor.y, self.rows - 1)
        self._active = main
        self.alt_exits += 1

    def scroll(self, count, up):
        screen = self._active
        top, bottom = screen.margins if screen.margins else (0, self.rows - 1)
        saved = copy.copy(screen.cursor)
        for _ in range(min(count, self.rows)):
            if up:
                screen.cursor.y = bottom
                screen.index()
            else:
                screen.cursor.y = top
                screen.reverse_index()
        screen.cursor = saved
