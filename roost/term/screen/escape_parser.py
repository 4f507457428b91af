"""The escape-sequence parser under roost's screen.

pyte's own Stream drops what roost needs to see: it reads `ESC[>c` as primary device
attributes, cannot tell OSC 10 from OSC 11, draws the body of DCS/APC strings as text,
turns `ESC[<u` into a stray "u", and a stray C0 control cuts short the text drawn with
it. This parser keeps every part of a sequence (its prefix `<=>?`, intermediates, sub-
parameters, the whole OSC text and its terminator) and hands it to a handler; the
screen decides what each means. It is a generator state machine like pyte's, the fastest
shape in CPython, with runs of plain text drawn in one call.
"""

import re

ESC = "\x1b"
BEL = "\x07"
CAN = "\x18"
SUB = "\x1a"
C1_ST = "\x9c"

# C0 controls a terminal executes; the others (and DEL, and C1 codes, which a UTF-8
# terminal does not honour) are dropped.
EXECUTED = frozenset("\x07\x08\x09\x0a\x0b\x0c\x0d")
PLAIN_TEXT = re.compile("[^\x00-\x1f\x7f-\x9f]+")

# Limits so a hostile program cannot grow a sequence without end.
MAX_PARAMS = 32
MAX_PARAM_DIGITS = 9
MAX_STRING = 4096


class EscapeParser:
    """Feeds text to a handler with these methods:

    draw(text), control(char), escape(final, intermediates),
    csi(final, params, prefix, intermediates), osc(text, terminator),
    string(kind, text) for DCS ("P"), APC ("_"), PM ("^") and SOS ("X").

    `params` is a list of strings as sent (digits, possibly with ':' sub-parameters,
    possibly empty); the handler converts them.
    """

    def __init__(self, handler):
        self.handler = handler
        self.reset()

    @property
    def at_rest(self):
        """Between sequences: a new parser would go on the same."""
        return self._ground

    def reset(self):
        self._machine = self._states()
        self._ground = next(self._machine)

    def feed(self, text):
        send = self._machine.send
        match = PLAIN_TEXT.match
        draw = self.handler.draw
        ground = self._ground
        offset = 0
        length = len(text)
        while offset < length:
            if ground:
                found = match(text, offset)
                if found:
                    end = found.end()
                    draw(text[offset:end])
                    offset = end
                    if offset >= length:
                        break
            ground = send(text[offset])
            offset += 1
        self._ground = ground

    def _states(self):
        handler = self.handler
        replay = ""   # characters that ended one sequence and start the next
        while True:
            if replay:
                char, replay = replay[0], replay[1:]
            else:
                char = yield True
            if char != ESC:
                if char in EXECUTED:
                    handler.control(char)
                continue
            char = yield None
            if char == "[":
                replay = yield from self._csi()
            elif char == "]":
                replay = yield from self._osc()
            elif char in "P_^X":
                replay = yield from self._string(char)
            elif char == ESC:
                replay = ESC
            elif " " <= char <= "/":
                # ESC with intermediates: charset designations (ESC ( B), DECALN (ESC # 8).
                intermediates = char
                char = yield None
                while " " <= char <= "/" and len(intermediates) < 4:
                    intermediates += char
                    char = yield None
                handler.escape(char, intermediates)
            elif char in (CAN, SUB):
                continue
            else:
                handler.escape(char, "")

    def _csi(self):
        handler = self.handler
        prefix = ""
        params = []
        current = ""
        intermediates = ""
        valid = True
        char = yield None
        if char in "<=>?":
            prefix = char
            char = yield None
        while True:
            if "0" <= char <= "9" or char == ":":
                if len(current) < MAX_PARAM_DIGITS * 4:
                    current += char
            elif char == ";":
                if len(params) < MAX_PARAMS:
                    params.append(current)
                current = ""
            elif "@" <= char <= "~":
                if valid:
                    if len(params) < MAX_PARAMS:
                        params.append(current)
                    handler.csi(char, params, prefix, intermediates)
                return ""
            elif " " <= char <= "/":
                intermediates += char
                if len(intermediates) > 4:
                    valid = False
            elif char in EXECUTED:
                handler.control(char)   # xterm executes C0 controls inside a sequence
            elif char in (CAN, SUB):
                return ""
            elif char == ESC:
                return ESC
            else:
                valid = False            # e.g. a second '?' after parameters
            char = yield None

    def _osc(self):
        text, terminator, replay = yield from self._collect(allow_bel=True)
        if terminator is not None:
            self.handler.osc(text, terminator)
        return replay

    def _string(self, kind):
        text, terminator, replay = yield from self._collect(allow_bel=False)
        if terminator is not None:
            self.handler.string(kind, text)
        return replay

    def _collect(self, allow_bel):
        """Gathers a string up to ST (ESC \\ or C1 ST) or, for OSC, BEL. Returns
        (text, terminator or None when aborted, a character to process again)."""
        parts = []
        size = 0
        while True:
            char = yield None
            if char == BEL and allow_bel:
                return "".join(parts), BEL, ""
            if char == C1_ST:
                return "".join(parts), ESC + "\\", ""
            if char == ESC:
                char = yield None
                if char == "\\":
                    return "".join(parts), ESC + "\\", ""
                # An ESC that does not finish the string aborts it and starts anew.
                return "".join(parts), None, ESC + char
            if char in (CAN, SUB):
                return "", None, ""
            if size < MAX_STRING:
                parts.append(char)
                size += 1
