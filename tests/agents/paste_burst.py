"""A terminal agent that takes fast typing for a paste, as Codex CLI does (its
paste_burst: PASTE_BURST_MIN_CHARS 3, PASTE_ENTER_SUPPRESS_WINDOW 120 ms): the first two
keys of a quick run (keys within QUICK_S of each other) are drawn at once, as typed; from
the third on they are gathered as a paste, drawn FLUSH_S after the last of them; an Enter
within ENTER_WINDOW_S of the paste's last key is a newline of it; any other Enter submits
(`submitted: TEXT`). A warning blinks in its footer as keys come ("⚠ 1 warning"), so its
screen changes before it has drawn what was typed. Raw mode, its input read by a thread;
each submitted text logged to argv[1].

Its screen, as Codex's: `› TEXT` (the composer), a blank line, then a footer of `·`s.
"""

import os
import sys
import termios
import threading
import time
import tty

QUICK_S = 0.03
FLUSH_S = 0.02
ENTER_WINDOW_S = 0.12


class Composer:
    def __init__(self, log):
        self.log = log
        self.text = ""         # what is drawn
        self.paste = ""        # keys gathered, not drawn yet
        self.last_key = 0.0
        self.last_paste_key = 0.0
        self.run = 0           # keys in the current quick run
        self.lock = threading.Lock()
        self.warning = False

    def key(self, char):
        with self.lock:
            now = time.monotonic()
            self.run = self.run + 1 if now - self.last_key < QUICK_S else 1
            self.last_key = now
            if char in "\r\n" and not self.paste and now - self.last_paste_key >= ENTER_WINDOW_S:
                submitted, self.text = self.text, ""
                with open(self.log, "a") as handle:
                    handle.write(submitted + "\n")
                sys.stdout.write(f"\x1b[1;1H\x1b[Ksubmitted: {submitted}")
                self.draw()
                return
            key = "⏎" if char in "\r\n" else char
            if self.run <= 2 and not self.paste and char not in "\r\n":
                self.text += key          # typed, as far as it can tell: drawn at once
                self.draw()
            else:
                self.paste += key
                self.last_paste_key = now

    def blink(self):
        with self.lock:
            self.warning = not self.warning
            self.draw()

    def tick(self):
        with self.lock:
            if self.paste and time.monotonic() - self.last_key >= FLUSH_S:
                self.text, self.paste = self.text + self.paste, ""
                self.draw()

    def draw(self):
        warning = "⚠ 1 warning · f2 to view" if self.warning else ""
        shown = self.text or "\x1b[2mAsk me anything\x1b[22m"      # a placeholder, as Codex's
        sys.stdout.write(f"\x1b[5;1H\x1b[K› {shown}\x1b[6;1H\x1b[K\x1b[7;1H\x1b[K  fake-model · /work"
                         f"\x1b[8;1H\x1b[K  ? for shortcuts   {warning}\x1b[5;{3 + len(self.text)}H")
        sys.stdout.flush()


def main():
    composer = Composer(sys.argv[1])
    tty.setraw(0, termios.TCSANOW)
    sys.stdout.write("\x1b[2J")
    composer.draw()

    def read():
        while True:
            data = os.read(0, 1024)
            if not data:
                return
            for char in data.decode("utf-8", "replace"):
                composer.key(char)
            composer.blink()

    threading.Thread(target=read, daemon=True).start()
    while True:
        composer.tick()
        time.sleep(0.005)


if __name__ == "__main__":
    sys.exit(main())
