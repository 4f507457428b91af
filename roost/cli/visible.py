"""Text from the daemon as it is shown on the person's terminal: every control character
made visible, so what they read is what is there (a command that hides `\\r`, an escape
sequence that redraws the line, a DEL).

    visible("make test\\r\\x1b[2Kecho ok")    # 'make test\\\\r\\\\e[2Kecho ok'

Newlines stay (the text is shown as lines); everything else below space, DEL, C1 and
the characters that reorder a line (bidirectional overrides) become backslash escapes.
A backslash the text holds is shown as it is: the escapes are there to be seen, not to
be read back.
"""

_NAMED = {"\t": "\\t", "\r": "\\r", "\x1b": "\\e"}


def visible(text):
    return "".join(_shown(char) for char in str(text))


def _shown(char):
    if char == "\n":
        return char
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    if code < 0x20 or code == 0x7F or 0x80 <= code < 0xA0:
        return f"\\x{code:02x}"
    if code in (0x2028, 0x2029, 0x200E, 0x200F) or 0x202A <= code <= 0x202E or 0x2066 <= code <= 0x2069:
        return f"\\u{code:04x}"      # line separators and bidirectional overrides reorder what is read
    return char
