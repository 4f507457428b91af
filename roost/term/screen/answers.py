"""What a terminal answers when a program asks it something: cursor position, status,
modes, device attributes, colours. Each function gives the answer's text; the Screen
collects them for whoever writes them back to the program."""

import pyte

# A VT220 with colour (DA1), xterm-like DA2, and a light-on-dark palette.
PRIMARY_DA = "\x1b[?62;22c"
SECONDARY_DA = "\x1b[>1;10;0c"
FOREGROUND = "rgb:c0c0/c0c0/c0c0"
BACKGROUND = "rgb:0000/0000/0000"
# Private modes roost knows (DECRQM answers "set"/"reset" for these, "unknown" otherwise).
KNOWN_MODES = frozenset((1, 5, 6, 7, 12, 25, 47, 1000, 1002, 1003, 1004, 1006, 1047, 1049, 2004))


def status(what, private, screen, cols, origin_mode):
    """DSR: 5 (all well) and 6 (where the cursor is, relative to the scrolling region
    under DECOM); None for what is not asked of terminals."""
    if what == 5 and not private:
        return "\x1b[0n"
    if what == 6:
        row, col = screen.cursor.y + 1, min(screen.cursor.x, cols - 1) + 1
        if origin_mode and screen.margins is not None:
            row -= screen.margins.top
        return f"\x1b[?{row};{col}R" if private else f"\x1b[{row};{col}R"
    return None


def mode(number, private, modes):
    """DECRQM: set (1), reset (2), or unknown (0) for a private mode; ANSI modes: unknown."""
    if private:
        state = (1 if modes.get(number) else 2) if number in KNOWN_MODES else 0
        return f"\x1b[?{number};{state}$y"
    return f"\x1b[{number};0$y"


def palette(rest, terminator):
    """OSC 4 queries (`index;?` pairs) answered from xterm's 256 colours."""
    answers = []
    parts = rest.split(";")
    for index, spec in zip(parts[::2], parts[1::2]):
        if spec == "?" and index.isdigit() and int(index) < 256:
            rgb = pyte.graphics.FG_BG_256[int(index)]
            red, green, blue = rgb[0:2], rgb[2:4], rgb[4:6]
            answers.append(f"\x1b]4;{int(index)};rgb:{red * 2}/{green * 2}/{blue * 2}{terminator}")
    return answers
