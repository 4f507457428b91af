"""Control characters in text that reaches a terminal (issue 16).

Text roost types into an agent's terminal (a reply, a message, a task's title) must not
carry a control character: `ESC [ 2 0 1 ~` would close roost's bracketed paste, `ESC [ Z`
would switch an agent's mode. Those are refused where the text enters (`first_control`).
Text the CLI prints from agents (names, summaries, questions) has them made visible
instead (`visible`), so a row cannot drive the person's terminal.

A leaf: the daemon's ops and the CLI both use it, and it imports nothing of roost's.
"""

import unicodedata

TYPED_OK = "\n\t"     # the only controls a typed text may hold

_C0 = ("NUL SOH STX ETX EOT ENQ ACK BEL BS HT LF VT FF CR SO SI "
       "DLE DC1 DC2 DC3 DC4 NAK SYN ETB CAN EM SUB ESC FS GS RS US").split()
_C1 = ("PAD HOP BPH NBH IND NEL SSA ESA HTS HTJ VTS PLD PLU RI SS2 SS3 "
       "DCS PU1 PU2 STS CCH MW SPA EPA SOS SGCI SCI CSI ST OSC PM APC").split()


def is_control(char):
    """C0, DEL or C1: the characters a terminal acts on rather than shows."""
    code = ord(char)
    return code < 0x20 or 0x7f <= code <= 0x9f


def first_control(text, allowed=TYPED_OK):
    """(index, char) of the first control character of `text` not in `allowed`, or None."""
    for index, char in enumerate(text):
        if is_control(char) and char not in allowed:
            return index, char
    return None


def describe(char):
    """'U+001B (ESC)': a control character named the way a person can look it up."""
    code = ord(char)
    if code < 0x20:
        name = _C0[code]
    elif code == 0x7f:
        name = "DEL"
    elif 0x80 <= code <= 0x9f:
        name = _C1[code - 0x80]
    else:
        name = unicodedata.name(char, "unnamed")
    return f"U+{code:04X} ({name})"


def refusal(text, what):
    """The sentence that refuses `text` (e.g. "reply text has a control character U+001B
    (ESC) at 12"), or None when it holds none."""
    found = first_control(text)
    if found is None:
        return None
    index, char = found
    return f"{what} has a control character {describe(char)} at {index}"


def visible(text, keep=""):
    """`text` as it may be printed on a person's terminal: each control character (and
    each other character that is not printable: bidi overrides, zero-width ones) shown as
    an escape (`\\x1b`, `\\u202e`), except those in `keep`."""
    text = str(text)
    if text.isprintable():
        return text
    shown = []
    for char in text:
        if char.isprintable() or char in keep:
            shown.append(char)
        elif ord(char) <= 0xff:
            shown.append(f"\\x{ord(char):02x}")
        elif ord(char) <= 0xffff:
            shown.append(f"\\u{ord(char):04x}")
        else:
            shown.append(f"\\U{ord(char):08x}")
    return "".join(shown)
