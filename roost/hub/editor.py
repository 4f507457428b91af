"""The hub's one-line editor (reply, rename, filter): fed one key at a time by the
hub's loop, so pushes keep coming while the person types."""

import curses

DONE = "done"
CANCEL = "cancel"
ESCAPE = "\x1b"


class LineEditor:
    def __init__(self, label, text="", limit=2000):
        self.label = label
        self.text = text
        self.cursor = len(text)
        self.limit = limit

    def feed(self, key):
        """One key (a str from get_wch, or a curses KEY_ number); DONE, CANCEL or None."""
        if key in ("\n", "\r", curses.KEY_ENTER):
            return DONE
        if key == ESCAPE or key == "\x07":             # Esc, Ctrl-g
            return CANCEL
        if key in ("\x7f", "\x08", curses.KEY_BACKSPACE):
            if self.cursor:
                self.text = self.text[:self.cursor - 1] + self.text[self.cursor:]
                self.cursor -= 1
        elif key in (curses.KEY_DC, "\x04"):
            self.text = self.text[:self.cursor] + self.text[self.cursor + 1:]
        elif key in (curses.KEY_LEFT, "\x02"):
            self.cursor = max(0, self.cursor - 1)
        elif key in (curses.KEY_RIGHT, "\x06"):
            self.cursor = min(len(self.text), self.cursor + 1)
        elif key in (curses.KEY_HOME, "\x01"):
            self.cursor = 0
        elif key in (curses.KEY_END, "\x05"):
            self.cursor = len(self.text)
        elif key == "\x15":                            # Ctrl-u: clear what is before the cursor
            self.text = self.text[self.cursor:]
            self.cursor = 0
        elif key == "\x0b":                            # Ctrl-k: clear what follows it
            self.text = self.text[:self.cursor]
        elif isinstance(key, str) and key.isprintable() and len(self.text) < self.limit:
            self.text = self.text[:self.cursor] + key + self.text[self.cursor:]
            self.cursor += len(key)
        return None

    def view(self, width):
        """(the line shown, the cursor's column): the text scrolled so the cursor shows."""
        head = f"{self.label}: "
        room = max(1, width - len(head) - 1)
        start = max(0, self.cursor - room + 1)
        return head + self.text[start:start + room], len(head) + self.cursor - start
