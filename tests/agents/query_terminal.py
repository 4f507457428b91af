"""A terminal agent that asks its terminal where the cursor is (ESC[6n) and waits for
the answer before it shows its prompt, as Codex and aider do at start. Then it echoes
lines like prompt_echo. Without an answer it waits forever."""

import os
import sys
import termios
import tty


def read_cursor_answer(fd):
    answer = b""
    while not answer.endswith(b"R"):
        chunk = os.read(fd, 1)
        if not chunk:
            return None
        answer += chunk
    return answer


def main():
    fd = sys.stdin.fileno()
    saved = termios.tcgetattr(fd)
    tty.setraw(fd, termios.TCSANOW)
    try:
        os.write(sys.stdout.fileno(), b"\x1b[6n")
        answer = read_cursor_answer(fd)
    finally:
        termios.tcsetattr(fd, termios.TCSANOW, saved)
    if answer is None:
        return 1
    row, col = answer[2:-1].decode().split(";")
    print(f"cursor at row {row} col {col}", flush=True)
    while True:
        sys.stdout.write("> ")
        sys.stdout.flush()
        line = sys.stdin.readline()
        if not line:
            return 0
        print(f"echo: {line.strip()}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
