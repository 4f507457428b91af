"""A terminal agent in its simplest form: prints a prompt `> `, reads a line, works a
little ("working..." then a pause), echoes the line, and prompts again. `quit` ends it.

argv[1]: seconds of work per line (default 0.3).
"""

import sys
import time


def main():
    work = float(sys.argv[1]) if len(sys.argv) > 1 else 0.3
    while True:
        sys.stdout.write("> ")
        sys.stdout.flush()
        line = sys.stdin.readline()
        if not line or line.strip() == "quit":
            print("bye")
            return 0
        print("working...", flush=True)
        time.sleep(work)
        print(f"echo: {line.strip()}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
