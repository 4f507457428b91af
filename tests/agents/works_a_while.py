"""An agent at work: prints `tick N` every interval, numbered from 1 with no gap, then
exits with the given status.

argv[1]: seconds to work (default 30); argv[2]: seconds between ticks (default 0.05);
argv[3]: exit status (default 0).
"""

import sys
import time


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 30.0
    interval = float(sys.argv[2]) if len(sys.argv) > 2 else 0.05
    status = int(sys.argv[3]) if len(sys.argv) > 3 else 0
    deadline = time.monotonic() + seconds
    tick = 0
    while time.monotonic() < deadline:
        tick += 1
        print(f"tick {tick}", flush=True)
        time.sleep(interval)
    print(f"worked {tick} ticks", flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
