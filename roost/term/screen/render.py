"""A pyte screen turned back into the bytes that paint it on a real terminal.

Used when a person attaches to a job: their terminal gets the screen as it stands
(characters with their colours and attributes, scrolling region, input modes, cursor),
then the live output.
"""

from pyte import graphics

_FOREGROUND = {name: code for code, name in {**graphics.FG_ANSI, **graphics.FG_AIXTERM}.items()}
_BACKGROUND = {name: code for code, name in {**graphics.BG_ANSI, **graphics.BG_AIXTERM}.items()}
_FOREGROUND.pop("default", None)
_BACKGROUND.pop("default", None)


def _colour(value, names, extended):
    if value == "default":
        return ""
    code = names.get(value)
    if code is not None:
        return f";{code}"
    try:
        red, green, blue = int(value[0:2], 16), int(value[2:4], 16), int(value[4:6], 16)
    except (ValueError, IndexError):
        return ""
    return f";{extended};2;{red};{green};{blue}"


def sgr(char):
    """The SGR sequence that sets a cell's pen, starting from a reset."""
    codes = "\x1b[0"
    if char.bold:
        codes += ";1"
    if char.italics:
        codes += ";3"
    if char.underscore:
        codes += ";4"
    if char.blink:
        codes += ";5"
    if char.reverse:
        codes += ";7"
    if char.strikethrough:
        codes += ";9"
    codes += _colour(char.fg, _FOREGROUND, 38)
    codes += _colour(char.bg, _BACKGROUND, 48)
    return codes + "m"


def _pen(char):
    return (char.fg, char.bg, char.bold, char.italics, char.underscore,
            char.strikethrough, char.reverse, char.blink)


def _blank(char):
    return char.data == " " and char.bg == "default" and not char.reverse


def render_screen(screen, rows, cols, input_modes, cursor_visible):
    out = ["\x1b[0m\x1b[r\x1b[H\x1b[2J"]
    plain = None
    for y in range(rows):
        line = screen.buffer.get(y)
        if not line:
            continue
        width = min(max(line) + 1, cols)
        while width and _blank(line[width - 1]):
            width -= 1
        if not width:
            continue
        out.append(f"\x1b[{y + 1};1H")
        pen = None
        for x in range(width):
            char = line[x]
            if char.data == "":
                continue   # the stub after a wide character
            char_pen = _pen(char)
            if char_pen != pen:
                if plain is None:
                    plain = _pen(screen.default_char)
                out.append("\x1b[0m" if char_pen == plain else sgr(char))
                pen = char_pen
            out.append(char.data)
        out.append("\x1b[0m")
    if screen.margins is not None:
        out.append(f"\x1b[{screen.margins.top + 1};{screen.margins.bottom + 1}r")
    for mode in input_modes:
        out.append(f"\x1b[?{mode}h")
    cursor = screen.cursor
    out.append(f"\x1b[{min(cursor.y, rows - 1) + 1};{min(cursor.x, cols - 1) + 1}H")
    out.append(sgr(cursor.attrs))
    out.append("\x1b[?25h" if cursor_visible else "\x1b[?25l")
    return "".join(out).encode("utf-8")
