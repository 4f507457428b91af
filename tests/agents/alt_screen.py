"""A full-screen agent: prints a line on the main screen, switches to the alternate
screen (DECSET 1049) and draws a boxed UI there, waits for a key, then leaves the
alternate screen, prints `back on the main screen` and a prompt, and waits again.
`q` at the prompt ends it."""

import os
import sys
import termios
import tty


def main():
    fd = sys.stdin.fileno()
    out = sys.stdout.fileno()
    os.write(out, b"before the full-screen part\r\n")
    saved = termios.tcgetattr(fd)
    tty.setraw(fd, termios.TCSANOW)
    try:
        os.write(out, b"\x1b[?1049h\x1b[H\x1b[2J")
        os.write(out, b"\x1b[2;3H+---------------+\x1b[3;3H| FULL SCREEN UI|\x1b[4;3H+---------------+")
        os.write(out, b"\x1b[6;3Hpress a key")
        os.read(fd, 1)
        os.write(out, b"\x1b[?1049l")
    finally:
        termios.tcsetattr(fd, termios.TCSANOW, saved)
    sys.stdout.write("back on the main screen\n> ")
    sys.stdout.flush()
    sys.stdin.readline()
    return 0


if __name__ == "__main__":
    sys.exit(main())
