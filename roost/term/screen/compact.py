"""A screen's cells kept compactly while its job is idle.

pyte keeps one namedtuple per cell in a dict per row: a full 40x120 screen costs about
450 KB, and roost holds hundreds of idle jobs. An idle screen's rows are packed into
runs of (pen, text) instead (a few KB), and unpacked when output comes again.
"""

from roost.term.screen.pyte_screen import cell

_STUB = "\x00"   # the empty cell after a wide character
_DEFAULT_PEN = ("default", "default", False, False, False, False, False, False)
# Pens are few: one shared tuple per distinct pen (up to a bound: true colour is not few).
_PENS = {_DEFAULT_PEN: _DEFAULT_PEN}
_MAX_PENS = 4096


def _pen(char):
    key = char[1:]
    pen = _PENS.get(key)
    if pen is None:
        if len(_PENS) >= _MAX_PENS:
            return key
        pen = _PENS[key] = key
    return pen


def pack(buffer, cols):
    """{row: packed row} for the rows that hold anything. A packed row is its text (one
    character a cell, all in the default pen), or (cells, pens): `cells` the text (or a
    tuple of cell texts when a cell holds several code points), `pens` a flat tuple of
    (first column, pen) pairs."""
    packed = {}
    for y, line in buffer.items():
        if not line:
            continue
        width = min(max(line) + 1, cols)
        cells = []
        pens = []
        pen = None
        simple = True
        for x in range(width):
            char = line[x]
            char_pen = _pen(char)
            if char_pen is not pen and char_pen != pen:
                pens += (x, char_pen)
                pen = char_pen
            data = char.data
            if data == "":
                data = _STUB
            elif len(data) != 1:
                simple = False
            cells.append(data)
        text = "".join(cells) if simple else tuple(cells)
        if simple and len(pens) == 2 and pens[1] is _DEFAULT_PEN:
            packed[y] = text
        else:
            packed[y] = (text, tuple(pens))
    return packed


def _runs(row):
    """(pen, cells) runs of a packed row."""
    if isinstance(row, str):
        return [(_DEFAULT_PEN, row)]
    cells, pens = row
    starts = pens[0::2] + (len(cells),)
    return [(pens[2 * index + 1], cells[starts[index]:starts[index + 1]])
            for index in range(len(pens) // 2)]


def unpack(packed, buffer):
    """Fills a pyte screen's (empty) buffer from `pack`'s rows, with shared cells."""
    for y, row in packed.items():
        line = buffer[y]
        x = 0
        for pen, cells in _runs(row):
            for data in cells:
                line[x] = cell("" if data == _STUB else data, pen)
                x += 1


def packed_lines(packed, rows):
    """The rows' text, as Screen.lines() gives it, straight from `pack`'s rows."""
    lines = []
    for y in range(rows):
        row = packed.get(y)
        if not row:
            lines.append("")
            continue
        cells = row if isinstance(row, str) else row[0]
        text = cells if isinstance(cells, str) else "".join(cells)
        lines.append(text.replace(_STUB, "").rstrip())
    return lines
