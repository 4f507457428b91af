"""A terminal agent that says its window size at start and whenever it changes
(SIGWINCH), then echoes lines like prompt_echo."""

import fcntl
import signal
import struct
import sys
import termios


def show_size(*_):
    rows, cols, _, _ = struct.unpack("HHHH", fcntl.ioctl(sys.stdout.fileno(), termios.TIOCGWINSZ, b"\0" * 8))
    sys.stdout.write(f"size {rows}x{cols}\n> ")
    sys.stdout.flush()


def main():
    signal.signal(signal.SIGWINCH, show_size)
    show_size()
    while True:
        line = sys.stdin.readline()
        if not line:
            return 0
        print(f"echo: {line.strip()}", flush=True)
        sys.stdout.write("> ")
        sys.stdout.flush()


if __name__ == "__main__":
    sys.exit(main())
