"""A full-screen program that floods with positioned updates (a stream redrawn in place,
as a TUI streams a model's answer): row 1 shows HEADER, rows 2-9 are redrawn 300 times,
and halfway through row 1 is cleared, never to be drawn again. A terminal shows row 1
empty at the end; a screen that skipped ahead over the clearing would still show HEADER.
"""

import sys
import time


def main():
    out = sys.stdout
    out.write("\x1b[H\x1b[2JHEADER")
    for step in range(300):
        if step == 150:
            out.write("\x1b[1;1H\x1b[2K")
        out.write("".join(f"\x1b[{row};1H\x1b[2Kline {row} step {step:03d} " + "=" * 90 for row in range(2, 10)))
        if step % 20 == 0:
            out.flush()
            time.sleep(0.005)
    out.write("\x1b[12;1Hflood done")
    out.flush()
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    sys.exit(main())
