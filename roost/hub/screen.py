"""The hub's drawing on curses: the list of groups, a pager (peek, the feed, the board,
help), the status line and the keys. Colours and glyphs degrade to plain text under
NO_COLOR, a dumb terminal or a locale that is not UTF-8; everything fits in 80x24."""

import curses
import time

from roost.client.terminal import printable
from roost.clock import now_ms
from roost.hub.fleet import TITLES
from roost.rows import spend_text

KEYS = [("↑↓ jk", "move"), ("enter", "attach"), ("r", "reply"), ("p", "peek"), ("T", "timeline"), ("s", "stop"),
        ("x", "rm"), ("R", "respawn"), ("n", "rename"), ("P", "pin"), ("/", "filter"),
        ("e", "events"), ("t", "board"), ("?", "help"), ("q", "quit")]
GLYPHS = {"needs": "◆", "working": "●", "finished": "✓", "failed": "✗", "pinned": "▲", "cursor": "▸"}
PLAIN_GLYPHS = {"needs": "!", "working": "*", "finished": "+", "failed": "x", "pinned": "^", "cursor": ">"}
COLOURS = {"needs": curses.COLOR_YELLOW, "working": curses.COLOR_GREEN, "finished": curses.COLOR_CYAN,
           "failed": curses.COLOR_RED, "dim": curses.COLOR_BLUE}


def plain_wanted(env, encoding):
    return bool(env.get("NO_COLOR")) or env.get("TERM", "dumb") == "dumb" or "utf" not in (encoding or "").lower()


AGE_UNITS = (("d", 86400), ("h", 3600), ("m", 60))


def age(since_ms, now_ms):
    """"<1m", "3m", "2h", "4d": how long, in minutes at the finest (a screen that
    changes every second would cost an idle hub a redraw a second)."""
    if not since_ms:
        return ""
    seconds = max(0, (now_ms - since_ms) // 1000)
    for unit, size in AGE_UNITS:
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return "<1m"


def age_changes_in(since_ms, now_ms):
    """Seconds until `age` says something else for this row."""
    if not since_ms:
        return None
    seconds = max(0, (now_ms - since_ms) / 1000)
    size = next((size for _, size in AGE_UNITS if seconds >= size), 60)
    return size - seconds % size + 0.05


def since_of(row, group):
    """The time a row's age counts from: the wait's start while it needs you."""
    return row.get("stateSince") if group == "needs" else (row.get("endedAt") or row.get("startedAt"))


def row_text(row, group, reason):
    """What a row says: the question or dialog while it needs you (with why it is
    ranked so), the screen's line while it works, the result or the error after."""
    if group == "needs" and row.get("waitingFor") == "limit":
        resets = row.get("resetsAt")
        when = f"resets {time.strftime('%H:%M', time.localtime(resets / 1000))}" if resets else "no reset time shown"
        return f"[usage limit, {when}] {row.get('summary') or ''}"
    if group == "needs" and row.get("waitingFor") == "budget":
        return f"[budget] {(row.get('budgetHold') or {}).get('why') or ''}  (roost budget allow {row['id']})"
    if group == "needs":
        asked = row.get("question") or row.get("summary") or f"waits ({row.get('waitingFor') or 'an answer'})"
        text = f"[{reason}] {asked}" if reason else asked
        if row.get("suggested") and row["suggested"].get("text"):
            text += f"  (suggested: {row['suggested']['text']})"
        return text
    if group == "failed":
        return row.get("error") or row.get("summary") or row.get("state") or ""
    return row.get("summary") or row.get("task") or ""


def unknown(row):
    """A live row roost cannot read (issue 27): shown as `?`, never as a question."""
    return row.get("state") == "blocked" and row.get("status") is None and row.get("waitingFor") is None


def extra_lines(fleet):
    """The lines above the list: the machines' states, the concierge's, the board's."""
    return (fleet.hosts_line(), fleet.concierge_line(), fleet.board_line())


def host_mark(row):
    """`box:` before a row's name when the hub shows several machines."""
    return f"{printable(row['host'], 16)}:" if row.get("host") else ""


class Painter:
    def __init__(self, stdscr, plain):
        self.stdscr = stdscr
        self.plain = plain
        self.glyphs = PLAIN_GLYPHS if plain else GLYPHS
        self.styles = {name: curses.A_NORMAL for name in COLOURS}
        self.styles["title"] = curses.A_BOLD
        if not plain and curses.has_colors():
            curses.start_color()
            try:
                curses.use_default_colors()
                background = -1
            except curses.error:
                background = curses.COLOR_BLACK
            for number, (name, colour) in enumerate(COLOURS.items(), 1):
                curses.init_pair(number, colour, background)
                self.styles[name] = curses.color_pair(number)
            self.styles["title"] = curses.A_BOLD
        self.shown = range(0)             # the entries the last list drawn showed
        self.keys = [(key if not plain else key.replace("↑↓", "up/dn"), what) for key, what in KEYS]

    @property
    def size(self):
        return self.stdscr.getmaxyx()

    def put(self, y, x, text, attr=curses.A_NORMAL):
        height, width = self.size
        if y < 0 or y >= height or x >= width:
            return
        text = text[:max(0, width - x)]
        try:
            self.stdscr.addstr(y, x, text, attr)
        except curses.error:
            pass                          # the bottom-right cell: curses moves past it and complains

    def keys_lines(self, width):
        lines, line = [], ""
        for key, what in self.keys:
            part = f"{key} {what}"
            if line and len(line) + 2 + len(part) > width:
                lines.append(line)
                line = part
            else:
                line = f"{line}  {part}" if line else part
        return lines + [line]

    # -- the list ---------------------------------------------------------------------

    def _list_top(self, fleet):
        """The first row of the list: below the header, the concierge's and the board's lines."""
        return 1 + sum(1 for extra in extra_lines(fleet) if extra)

    def list_room(self, fleet):
        height, width = self.size
        return max(1, height - len(self.keys_lines(width)) - 1 - self._list_top(fleet))

    def draw_list(self, fleet, entries, selected, top, status, prompt=None):
        """`entries`: [("title", group, count) | ("row", row, group, reason)]; returns the
        number of list lines it had room for (the caller scrolls by it)."""
        self.stdscr.erase()
        height, width = self.size
        counts = fleet.counts()
        header = "roost hub  " + "  ".join(f"{counts[group]} {label}" for group, label in
                                           (("needs", "need you"), ("working", "working"),
                                            ("finished", "finished"), ("failed", "failed")))
        today = fleet.today_text()
        if today:
            header += f"   {today}"
        windows = fleet.windows_text(now_ms())
        if windows:
            header += f"   {windows}"
        if fleet.filter:
            header += f"   filter: {printable(fleet.filter, 40)}"
        self.put(0, 0, header, curses.A_BOLD)
        y = 1
        for extra in extra_lines(fleet):
            if extra:
                self.put(y, 0, printable(extra, 500), self.styles["dim"])
                y += 1
        keys = self.keys_lines(width)
        bottom = height - len(keys) - 1      # the status line's row
        room = max(1, bottom - y)
        now = now_ms()
        self.shown = range(top, min(len(entries), top + room))
        for index in self.shown:
            self._draw_entry(y, entries[index], index == selected, width, now)
            y += 1
        if not entries:
            self.put(y, 2, "no jobs yet: `roost run` starts one" + (" (none match the filter)" if fleet.filter else ""))
        if prompt is not None:
            self.put(bottom, 0, prompt, curses.A_BOLD)
        elif status:
            self.put(bottom, 0, printable(status, 500), curses.A_BOLD)
        for offset, line in enumerate(keys):
            self.put(bottom + 1 + offset, 0, line, curses.A_REVERSE if not self.plain else curses.A_NORMAL)
        return room

    def _draw_entry(self, y, entry, chosen, width, now):
        if entry[0] == "title":
            _, group, count = entry
            self.put(y, 0, f"{self.glyphs[group]} {TITLES[group]} ({count})",
                     self.styles["title"] | self.styles[group])
            return
        _, row, group, reason = entry
        cursor = self.glyphs["cursor"] if chosen else " "
        pin = self.glyphs["pinned"] if row.get("pinned") else " "
        name = host_mark(row) + printable(row.get("name") or row["id"], 18)
        when = age(since_of(row, group), now)
        text = printable(row_text(row, group, reason), 500)
        glyph = "?" if unknown(row) else self.glyphs[group]
        spent = spend_text(row.get("spend"), small_digits=3, tokens_unit="t")      # its 8 columns
        line = f"{cursor}{pin}{glyph} {name:<18} {when:>4} {spent:>8}  {text}"
        attr = curses.A_REVERSE if chosen else curses.A_NORMAL
        if chosen:
            self.put(y, 0, line.ljust(width), attr)
        else:
            self.put(y, 0, line[:3], self.styles[group])
            self.put(y, 3, line[3:])

    # -- a pager ----------------------------------------------------------------------

    def draw_pager(self, title, lines, top, status=None):
        self.stdscr.erase()
        height, width = self.size
        self.put(0, 0, title, curses.A_BOLD)
        room = max(1, height - 2)
        for offset, line in enumerate(lines[top:top + room]):
            self.put(1 + offset, 0, line)
        hint = status or "↑↓ jk scroll  q back"
        self.put(height - 1, 0, hint if not self.plain else hint.replace("↑↓", "up/dn"),
                 curses.A_REVERSE if not self.plain else curses.A_NORMAL)
        return room

