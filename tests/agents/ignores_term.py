"""A job that ignores SIGTERM: stopping it takes the whole grace period (then SIGKILL)."""

import signal
import sys
import time

signal.signal(signal.SIGTERM, signal.SIG_IGN)
sys.stdout.write("ignoring SIGTERM\n")
sys.stdout.flush()
while True:
    time.sleep(3600)
