"""Keys by name, as a person presses them (`roost keys ID Down Enter`): the bytes a
terminal sends for each. The arrows follow the program's cursor-key mode (DECCKM), as a
real terminal's do."""

_NAMED = {
    "enter": b"\r", "return": b"\r", "tab": b"\t", "btab": b"\x1b[Z", "escape": b"\x1b", "esc": b"\x1b",
    "backspace": b"\x7f", "space": b" ", "delete": b"\x1b[3~", "insert": b"\x1b[2~",
    "home": b"\x1b[H", "end": b"\x1b[F", "pageup": b"\x1b[5~", "pagedown": b"\x1b[6~",
}
_ARROWS = {"up": b"A", "down": b"B", "right": b"C", "left": b"D"}
NAMES = sorted(set(_NAMED) | set(_ARROWS))


class UnknownKey(ValueError):
    pass


def key_bytes(name, application_cursor=False):
    """The bytes of one key: a name (Enter, Down, ...), C-x for Ctrl-x, or one character."""
    lowered = name.lower()
    if lowered in _NAMED:
        return _NAMED[lowered]
    if lowered in _ARROWS:
        return (b"\x1bO" if application_cursor else b"\x1b[") + _ARROWS[lowered]
    if (len(lowered) == 3 and lowered.startswith("c-")) or (len(lowered) == 2 and lowered[0] == "^"):
        char = lowered[-1]
        if "a" <= char <= "z" or char in "@[\\]^_":
            return bytes([ord(char.upper()) & 0x1F])
    if len(name) == 1 and name.isprintable():
        return name.encode("utf-8")
    raise UnknownKey(f"{name!r} is not a key roost knows (keys: {', '.join(NAMES)}, C-x, or one character)")
