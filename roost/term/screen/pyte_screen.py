"""pyte's screen as roost uses it: the CSI finals it handles, parameters as pyte wants
them, a small record of the rows it changed, cells shared between every screen, and a
resize that keeps the cursor's line (the screen's cells; roost.term.screen.screen
decides what each sequence means)."""

import unicodedata

import pyte
from pyte import modes
from pyte.screens import Char, StaticDefaultDict, wcwidth

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


# One Char per (text, pen), shared by every cell that shows it on every screen (issue 21).
# pyte makes a namedtuple per character drawn, which the collector tracks for good: a
# flood of 20 jobs drew tens of thousands a second, and the collections they set off (a
# full one walking every thawed screen's cells, 3-16 ms, inside a slice of a flood)
# were the loop's longest pauses while a daemon adopted 200 jobs. Shared, a drawn
# character allocates nothing, and drawing is 1.7x as fast (232 KiB of lines: 247 ms
# against 429). Bounded: past it (true colour makes pens many) cells are made as pyte
# makes them.
_CELLS = {}
_MAX_CELLS = 16384


def cell(data, pen):
    """The shared Char of `data` in `pen` (a Char's fields after its data)."""
    key = (data,) + pen
    found = _CELLS.get(key)
    if found is None:
        found = tuple.__new__(Char, key)      # Char(...) goes through a slower __new__
        if len(_CELLS) < _MAX_CELLS:
            _CELLS[found] = found
    return found


class CellScreen(pyte.Screen):
    """pyte's Screen whose drawn cells are shared (`cell`)."""

    def draw(self, data):
        """Text at the cursor as pyte draws it: the charset's translation, a wrap at the
        last column under DECAWM, insert mode, wide characters (and the stub cell after
        one), combining marks joined to the cell before; an unprintable character ends
        the run."""
        data = data.translate(self.g1_charset if self.charset else self.g0_charset)
        cursor, columns, mode, buffer = self.cursor, self.columns, self.mode, self.buffer
        for char in data:
            width = wcwidth(char)
            if cursor.x == columns:
                if modes.DECAWM in mode:
                    self.dirty.add(cursor.y)
                    self.carriage_return()
                    self.linefeed()
                elif width > 0:
                    cursor.x -= width
            if width > 0 and modes.IRM in mode:
                self.insert_characters(width)
            line = buffer[cursor.y]
            if width == 1:
                line[cursor.x] = cell(char, cursor.attrs[1:])
            elif width == 2:
                pen = cursor.attrs[1:]
                line[cursor.x] = cell(char, pen)
                if cursor.x + 1 < columns:
                    line[cursor.x + 1] = cell("", pen)
            elif width == 0 and unicodedata.combining(char):
                if cursor.x:
                    row, x = line, cursor.x - 1
                elif cursor.y:
                    row, x = buffer[cursor.y - 1], columns - 1
                else:
                    row = None
                if row is not None:
                    last = row[x]
                    row[x] = last._replace(data=unicodedata.normalize("NFC", last.data + char))
            else:
                break
            if width > 0:
                cursor.x = min(cursor.x + width, columns)
        self.dirty.add(cursor.y)


def new_pyte_screen(rows, cols):
    screen = CellScreen(cols, rows)
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
