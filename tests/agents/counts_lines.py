"""A terminal agent that records every line it reads, and whether it came before the
agent was ready for it (typed while it worked, not at its prompt).

It prints `> `, reads one line, shows `working...` for argv[2] seconds, replaces it with
`echo: LINE`, and prompts again. Each line is a JSON line of argv[1]: {"line", "early"},
`early` when the line was already waiting before the prompt was shown.
"""

import json
import os
import select
import sys
import time


def main():
    log_path = sys.argv[1]
    work = float(sys.argv[2]) if len(sys.argv) > 2 else 0.05
    while True:
        # In canonical mode a read gives one line: what waits already was typed too soon.
        early = bool(select.select([0], [], [], 0)[0])
        os.write(1, b"> ")
        data = os.read(0, 65536)
        if not data:
            return 0
        line = data.decode("utf-8", "replace").rstrip("\r\n")
        with open(log_path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps({"line": line, "early": early}) + "\n")
        os.write(1, b"working...")
        time.sleep(work)
        os.write(1, b"\r\x1b[Kecho: " + line.encode("utf-8") + b"\r\n")


if __name__ == "__main__":
    sys.exit(main())
