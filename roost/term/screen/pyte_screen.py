"""pyte's screen as roost uses it: the CSI finals it handles, parameters as pyte wants
them, a small record of the rows it changed, and a resize that keeps the cursor's line
(the screen's cells; roost.term.screen.screen decides what each sequence means)."""

import pyte
from pyte.screens import StaticDefaultDict

CSI_METHODS = {
    "@": "insert_characters", "A": "cursor_up", "B": "cursor_down", "C": "cursor_forward",
    "D": "cursor_back", "E": "cursor_down1", "F": "cursor_up1", "G": "cursor_to_column",
    "H": "cursor_position", "f": "cursor_position", "L": "insert_lines", "M": "delete_lines",
    "P": "delete_characters", "X": "erase_characters", "a": "cursor_forward",
    "d": "cursor_to_line", "e": "cursor_down", "`": "cursor_to_column", "m": "select_graphic_rendition",
}


def number(param, default=0):
    """A parameter as an int; sub-parameters (after ':') dropped; capped like VTs do."""
    head = param.split(":", 1)[0]
    return min(int(head), 9999) if head else default


def sgr_params(params):
    """SGR parameters as ints, with colon forms (38:2::r:g:b, 4:3) made plain."""
    values = []
    for param in params:
        if ":" not in param:
            values.append(min(int(param), 9999) if param else 0)
            continue
        parts = [int(part) if part else 0 for part in param.split(":")]
        if parts[0] in (38, 48) and len(parts) >= 3 and parts[1] == 5:
            values.extend(parts[:3])
        elif parts[0] in (38, 48) and len(parts) >= 5 and parts[1] == 2:
            values.extend([parts[0], 2] + parts[-3:])
        elif parts[0] not in (38, 48, 58):
            values.append(parts[0])   # e.g. 4:3, a curly underline: underline
    return values


class TouchedRows:
    """pyte records the rows it changed (`dirty`) for a renderer; roost only asks which
    stretch of rows was touched since it last looked (Screen.take_change), so it keeps
    two numbers rather than a set (a set of every row costs 2 KB a screen)."""

    __slots__ = ("low", "high")

    def __init__(self):
        self.low = self.high = None

    def add(self, row):
        if self.low is None or row < self.low:
            self.low = row
        if self.high is None or row > self.high:
            self.high = row

    def update(self, rows):
        if isinstance(rows, range):
            if len(rows):
                self.add(rows.start)
                self.add(rows[-1])
            return
        for row in rows:
            self.add(row)

    def take(self):
        """(first, last) row touched since the last take, or None."""
        touched = None if self.low is None else (self.low, self.high)
        self.low = self.high = None
        return touched

    def clear(self):
        self.low = self.high = None

    def __iter__(self):
        return iter(()) if self.low is None else iter(range(self.low, self.high + 1))


def new_pyte_screen(rows, cols):
    screen = pyte.Screen(cols, rows)
    screen.dirty = TouchedRows()
    # pyte makes each row as StaticDefaultDict[int, Char](...): through a typing alias,
    # which the row then keeps (__orig_class__, in a __dict__ of its own), three objects
    # more a row for the collector to walk. The same row, made plainly:
    screen.buffer.default_factory = lambda: StaticDefaultDict(screen.default_char)
    return screen


# Idle screens' tab stops and modes are nearly all alike (a set of tab stops alone is
# 700 bytes): while frozen, a screen holds one shared immutable copy; it takes its own
# again when it thaws, before anything can change them.
_SHARED = {}
_MAX_SHARED = 128


def _shared(values):
    values = frozenset(values)
    if len(_SHARED) >= _MAX_SHARED:
        return values
    return _SHARED.setdefault(values, values)


def share_defaults(screen):
    screen.tabstops = _shared(screen.tabstops)
    screen.mode = _shared(screen.mode)


def own_defaults(screen):
    screen.tabstops = set(screen.tabstops)
    screen.mode = set(screen.mode)


def resize_pyte_screen(screen, rows, cols):
    """Resize a pyte screen as a terminal does: fewer rows drop the empty ones below
    the cursor first, then the top ones, and the cursor moves with its line (pyte
    would drop top rows only and leave the cursor where it was)."""
    excess = screen.lines - rows
    if excess > 0:
        below = max(0, screen.lines - 1 - screen.cursor.y)
        from_top = excess - min(excess, below)
        kept = {y - from_top: line for y, line in screen.buffer.items()
                if from_top <= y < from_top + rows}
        screen.buffer.clear()
        screen.buffer.update(kept)
        screen.cursor.y = max(0, screen.cursor.y - from_top)
        screen.lines = rows
        screen.margins = None
    screen.resize(rows, cols)
    screen.cursor.y = min(screen.cursor.y, rows - 1)
    screen.cursor.x = min(screen.cursor.x, cols)
