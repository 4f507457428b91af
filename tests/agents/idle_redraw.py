"""A terminal agent that redraws itself while it waits, as real TUIs do: its prompt
`> ` is drawn again every 0.1 s with the same text, and its window title changes each
time (Codex's does once a second). Nothing a person sees changes: it waits, its input
read by a thread of its own (what it reads is dropped).

argv[1]: "words" to redraw a line whose text does change (a clock), for the contrast.
"""

import os
import sys
import threading
import time


def read_input():
    while os.read(0, 1024):
        pass


def main():
    changing = len(sys.argv) > 1 and sys.argv[1] == "words"
    threading.Thread(target=read_input, daemon=True).start()
    sys.stdout.write("ready\r\n")
    count = 0
    while True:
        count += 1
        status = f"tick {count}" if changing else "idle"
        sys.stdout.write(f"\x1b]0;agent {count}\x07\x1b[2;1H{status}\x1b[K\r\n> ")
        sys.stdout.flush()
        time.sleep(0.1)


if __name__ == "__main__":
    sys.exit(main())
