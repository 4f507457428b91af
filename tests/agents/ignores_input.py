"""A terminal agent that never reads its input: its terminal is raw (no echo, as a
full-screen agent's is), it shows a prompt and then sleeps. Text typed into it stays
in the pty's buffer and never shows."""

import sys
import termios
import time
import tty


def main():
    if sys.stdin.isatty():
        tty.setraw(sys.stdin.fileno(), termios.TCSANOW)
    sys.stdout.write("ready\r\n> ")
    sys.stdout.flush()
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    sys.exit(main())
