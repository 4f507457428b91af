"""A stand-in for a real agent: it draws recorded screens (the bytes a real agent wrote,
tests/fixtures/agents/) one after the other, the next each time a line is typed, and
keeps what it was given.

REPLAY_SCREENS: the recordings' `.output.bin` paths, separated by `:`; REPLAY_LOG: a file
that gets one JSON line per event: {"argv": [...]} at start, then {"typed": LINE}.
After the last screen it stays, drawing nothing more, until its input ends. As the real
agents do (they read raw input), it does not echo, and the terminal's answers to the
recordings' queries are not part of what it says was typed.
"""

import json
import os
import re
import sys
import termios

# What a terminal answers a program's queries with (CSI, DCS, OSC replies): not typing.
ANSWER = re.compile(r"\x1b(?:\[[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]|P.*?\x1b\\|\][^\x07\x1b]*(?:\x07|\x1b\\)|.)")


def log(entry):
    with open(os.environ["REPLAY_LOG"], "a", encoding="utf-8") as handle:
        handle.write(json.dumps(entry) + "\n")


def draw(path):
    with open(path, "rb") as handle:
        data = handle.read()
    out = sys.stdout.buffer
    out.write(b"\x1b[?1049l\x1b[H\x1b[2J")   # a fresh main screen, as at the agent's start
    out.write(data)
    out.flush()


def main():
    screens = [path for path in os.environ["REPLAY_SCREENS"].split(":") if path]
    attrs = termios.tcgetattr(sys.stdin.fileno())
    attrs[3] &= ~termios.ECHO
    termios.tcsetattr(sys.stdin.fileno(), termios.TCSANOW, attrs)
    log({"argv": sys.argv[1:]})
    draw(screens.pop(0))
    for line in sys.stdin:
        log({"typed": ANSWER.sub("", line.rstrip("\n"))})
        if screens:
            draw(screens.pop(0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
