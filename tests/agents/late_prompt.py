"""A terminal agent that draws its prompt late, as pi does: a banner, a quiet second and
a half (longer than a settle time), then the prompt `prompt> `. What was typed before the
prompt was drawn is thrown away (its editor starts on a clean input), so text typed too
early is lost. Then it echoes each line as `got: LINE`.

argv[1]: seconds before the prompt (default 1.5).
"""

import sys
import termios
import time


def main():
    delay = float(sys.argv[1]) if len(sys.argv) > 1 else 1.5
    print("loading the editor...", flush=True)
    time.sleep(delay)
    termios.tcflush(sys.stdin.fileno(), termios.TCIFLUSH)
    while True:
        sys.stdout.write("prompt> ")
        sys.stdout.flush()
        line = sys.stdin.readline()
        if not line:
            return 0
        print(f"got: {line.strip()}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
