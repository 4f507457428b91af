"""The hub's loop: one connection to the daemon, subscribed (no polling), the person's
keys, and the screen drawn again only when something changed. It waits in one
`select` on the terminal, the socket and a wake pipe (a resize), so an idle hub costs
nothing but a timer for the ages it shows.

Attaching (enter) leaves curses for roost.client.terminal's attach, the one `roost
attach` uses, on the same connection: its pushes keep the rows while the person is
attached, and on detach the hub draws again.

With machines named (`--host`, roost.json's `hosts`) it holds one connection per
machine (roost.hub.links): a machine that drops is shown as down and tried again with
backoff, its rows gone until it is back; a key on a row goes to the row's machine."""

import curses
import os
import select
import time

from roost.client import terminal
from roost.client.connection import new_request_id
from roost.clock import now_ms
from roost.hub import actions, views
from roost.hub.editor import CANCEL, DONE, ESCAPE, LineEditor
from roost.hub.fleet import Fleet
from roost.hub.machines import TODAY_EVERY_S, Machines, receive
from roost.hub.screen import age_changes_in, since_of

QUIT = "quit"


class Hub:
    def __init__(self, links, stdscr, painter):
        self.stdscr = stdscr
        self.painter = painter
        self.fleet = Fleet()
        # the daemons: roost.hub.links.Link, one per machine (the first holds the board)
        self.machines = Machines(links, self.fleet, self.on_push, self.say)
        self.selected_id = None
        self.top = 0
        self.status = ""
        self.editor = None            # (LineEditor, what to do with its text)
        self.confirm = None           # (question, what to do on "y")
        self.pager = None             # {"title", "lines" or a fn, "top", "follow"}
        self.entries = []
        self._built = None            # the fleet's layout the entries were built from
        self._refreshed = None        # the fleet's version their rows are of
        self.focused = True           # the hub was just opened: it is looked at until the terminal says
        self._told_focus = False      # the job last told as looked at (False: none told yet)

    # -- the daemon -------------------------------------------------------------------

    def say(self, text):
        """The status line's text."""
        self.status = text

    def _report_focus(self):
        """The job looked at (selected while the terminal has the focus), told to the
        daemons when it changes."""
        looked_at = self.selected_id if self.focused and self.pager is None else None
        if looked_at != self._told_focus:
            self._told_focus = looked_at
            self.machines.tell_focus(looked_at)

    def on_push(self, message):
        if message.get("event") == "notify":
            self.alert(message.get("note") or {})
        else:
            self.fleet.apply(message)

    def alert(self, note):
        """The terminal's own notification (OSC 9, OSC 777) and the bell; curses'
        screen is left as it is (these sequences move no cursor)."""
        title = terminal.printable(note.get("title") or "roost", 200)
        body = terminal.printable(note.get("body") or "", 300)
        self.status = f"{title}: {body}" if body else title
        os.write(1, (f"\x1b]9;{title}: {body}\x07"
                     f"\x1b]777;notify;{title.replace(';', ',')};{body.replace(';', ',')}\x07\x07").encode())

    # -- the loop ---------------------------------------------------------------------

    def run(self, wake_read):
        self.machines.start(wait=False)
        self.focus_reporting()
        while True:
            self.draw()
            self._report_focus()
            sockets = {link.client.sock: link for link in self.machines.links if link.client is not None}
            ready, _, _ = select.select([0, *sockets, wake_read], [], [], self._timeout())
            if wake_read in ready:
                os.read(wake_read, 64)
                self.resize()
            if 0 in ready:                # the person's keys before the pushes: they wait on the screen
                if self.machines.guarded(lambda _: self._keys(), self.machines.links[0]) == QUIT:
                    return
                self.draw()
                self._report_focus()
            for sock, link in sockets.items():
                if sock in ready and link.client is not None:
                    self.machines.guarded(receive, link)
            self.machines.take_pushes()
            self.machines.reconnect_due()

    def _keys(self):
        keys = []
        while True:
            try:
                keys.append(self.stdscr.get_wch())
            except curses.error:
                break
        index = 0
        while index < len(keys):
            # The terminal's focus reports (DECSET 1004): ESC [ I in, ESC [ O out.
            if keys[index] == ESCAPE and keys[index + 1:index + 3] in (["[", "I"], ["[", "O"]):
                self.focused = keys[index + 2] == "I"
                index += 3
                continue
            if self.key(keys[index]) == QUIT:
                return QUIT
            index += 1
        return None

    def focus_reporting(self):
        """Asks the terminal to say when it gains and loses the focus (an attach's
        leaving turns that off: it is asked again after)."""
        os.write(1, b"\x1b[?1004h")

    def _timeout(self):
        """Until an age on screen says something else (None: nothing changes by itself)."""
        now = time.monotonic()
        retries = [max(0.0, (link.connecting[1] if link.connecting else link.retry_at) - now)
                   for link in self.machines.links if link.client is None or link.connecting]
        if self.pager is not None:
            return min(retries) if retries else None
        now = now_ms()
        changes = [age_changes_in(since_of(entry[1], entry[2]), now) for entry in
                   (self.entries[index] for index in self.painter.shown if index < len(self.entries))
                   if entry[0] == "row"]
        changes = [change for change in changes if change is not None] + retries
        if self.fleet.spend_stale:
            changes.append(TODAY_EVERY_S)       # today's spend, read again once it may be
        return min(changes) if changes else None

    def resize(self):
        try:
            size = os.get_terminal_size(1)
        except OSError:
            return
        curses.resizeterm(size.lines, size.columns)
        self.stdscr.clear()

    # -- drawing ----------------------------------------------------------------------

    def _build(self):
        entries = []
        for group, rows in self.fleet.groups():
            entries.append(("title", group, len(rows)))
            entries.extend(("row", row, group, reason) for row, reason in rows)
        self.entries = entries

    def _refresh(self):
        """The same layout, newer rows (a working row's line moved on)."""
        rows = self.fleet.rows
        self.entries = [entry if entry[0] == "title" else (entry[0], rows.get(entry[1]["id"], entry[1]), *entry[2:])
                        for entry in self.entries]

    def _rows(self):
        return [index for index, entry in enumerate(self.entries) if entry[0] == "row"]

    def selected(self):
        for entry in self.entries:
            if entry[0] == "row" and entry[1]["id"] == self.selected_id:
                return entry[1]
        return None

    def draw(self):
        if self._built != self.fleet.layout:
            self._build()
            self._built = self.fleet.layout
        elif self._refreshed != self.fleet.version:
            self._refresh()
        self._refreshed = self.fleet.version
        rows = self._rows()
        ids = [self.entries[index][1]["id"] for index in rows]
        if rows and self.selected_id not in ids:
            self.selected_id = ids[0]
        if self.pager is not None:
            self._draw_pager()
            return
        index = next((i for i in rows if self.entries[i][1]["id"] == self.selected_id), -1)
        prompt = None
        if self.editor is not None:
            prompt, column = self.editor[0].view(self.painter.size[1])
        elif self.confirm is not None:
            prompt = self.confirm[0] + " (y/n)"
        height = self.painter.size[0]
        room = self.painter.list_room(self.fleet)
        if index >= 0:
            if index < self.top + 1:
                self.top = max(0, index - 1)          # the group's title stays in view
            elif index >= self.top + room:
                self.top = index - room + 1
            else:
                self.top = min(self.top, max(0, len(self.entries) - room))
        self.painter.draw_list(self.fleet, self.entries, index, self.top, self.status, prompt)
        if self.editor is not None:
            curses.curs_set(1)
            keys_rows = len(self.painter.keys_lines(self.painter.size[1]))
            self.stdscr.move(height - keys_rows - 1, min(column, self.painter.size[1] - 1))
        else:
            _cursor(0)
        self.stdscr.refresh()

    def _draw_pager(self):
        pager = self.pager
        lines = pager["lines"]() if callable(pager["lines"]) else pager["lines"]
        room = self.painter.size[0] - 2
        if pager.get("follow"):
            pager["top"] = max(0, len(lines) - room)
        pager["top"] = max(0, min(pager["top"], max(0, len(lines) - room)))
        self.painter.draw_pager(pager["title"], lines, pager["top"])
        _cursor(0)
        self.stdscr.refresh()

    # -- keys -------------------------------------------------------------------------

    def key(self, key):
        if key == curses.KEY_RESIZE:
            return None               # resizeterm's own echo of a resize already handled
        if self.editor is not None:
            return self._edit(key)
        if self.confirm is not None:
            question, action = self.confirm
            self.confirm = None
            if key in ("y", "Y"):
                action()
            else:
                self.status = ""
            return None
        if self.pager is not None:
            return self._page(key)
        return self._list_key(key)

    def _edit(self, key):
        editor, action = self.editor
        outcome = editor.feed(key)
        if action == "filter":
            self.fleet.set_filter("" if outcome == CANCEL else editor.text)
        if outcome is not None:
            self.editor = None
            _cursor(0)
            if outcome == DONE and callable(action):
                action(editor.text)
        return None

    def _page(self, key):
        pager = self.pager
        if key in ("q", ESCAPE, "\n", curses.KEY_LEFT) or (key == pager.get("closer")):
            self.pager = None
        elif key in ("j", curses.KEY_DOWN):
            pager["top"] += 1
            pager["follow"] = False
        elif key in ("k", curses.KEY_UP):
            pager["top"] -= 1
            pager["follow"] = False
        elif key in (" ", curses.KEY_NPAGE):
            pager["top"] += self.painter.size[0] - 3
        elif key in ("b", curses.KEY_PPAGE):
            pager["top"] -= self.painter.size[0] - 3
        return None

    def _move(self, step):
        rows = [self.entries[index][1]["id"] for index in self._rows()]
        if not rows:
            return
        at = rows.index(self.selected_id) if self.selected_id in rows else 0
        self.selected_id = rows[max(0, min(len(rows) - 1, at + step))]

    def _list_key(self, key):
        if key in ("q", "\x03"):
            return QUIT
        if key in ("j", curses.KEY_DOWN):
            self._move(1)
        elif key in ("k", curses.KEY_UP):
            self._move(-1)
        elif key in (curses.KEY_NPAGE, " "):
            self._move(self.painter.size[0] - 4)
        elif key == curses.KEY_PPAGE:
            self._move(-(self.painter.size[0] - 4))
        elif key in ("g", curses.KEY_HOME):
            self._move(-len(self.entries))
        elif key in ("G", curses.KEY_END):
            self._move(len(self.entries))
        elif key == "/":
            self.editor = (LineEditor("filter", self.fleet.filter, limit=100), "filter")
        elif key == ESCAPE:
            self.fleet.set_filter("")
        elif key == "?":
            self.pager = {"title": "roost hub: help", "lines": views.help_lines(), "top": 0, "closer": "?"}
        elif key == "e":
            self.pager = {"title": "roost hub: events (newest last)", "lines": lambda: views.feed_lines(self.fleet.feed),
                          "top": 0, "follow": True, "closer": "e"}
        elif key == "t":
            self._board()
        else:
            row = self.selected()
            if row is not None:
                self._row_key(key, row)
        return None

    def _row_key(self, key, row):
        handler = actions.ROW_KEYS.get(key)
        if handler is not None:
            handler(self, row)

    def _board(self):
        tasks = self.machines.call("task", {"action": "list"})
        if tasks is not None:
            self.fleet.set_tasks(tasks.get("tasks") or [])
        self.pager = {"title": "roost hub: the board",
                      "lines": lambda: views.board_lines(self.fleet.tasks, self.fleet.board_line()),
                      "top": 0, "closer": "t"}

    def ask(self, question, action):
        self.confirm = (question, action)

    def edit(self, label, text, action, limit=2000):
        self.editor = (LineEditor(label, text, limit), action)

    def request_id(self):
        return new_request_id()


def _cursor(visibility):
    try:
        curses.curs_set(visibility)
    except curses.error:
        pass
