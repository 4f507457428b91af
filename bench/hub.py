"""The hub (`python -m roost hub`) on a pty of 120x40 against a daemon with 500 jobs:
480 waiting at a prompt and 20 printing a line every 100 ms (their rows change as fast
as the daemon pushes them). Measured: start-up to the first full screen (the keys' line
drawn, the last of it), the hub's CPU with the 20 printing, a keystroke (j/k) to the
screen's change (the selection's glyph redrawn), and its CPU once nothing changes (the
20 stopped).

    .venv/bin/python bench/hub.py          # prints the figures
"""

import fcntl
import os
import statistics
import struct
import subprocess
import sys
import termios
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, HERE)

from benchkit import percentile, wait  # noqa: E402
from jobs import Daemon, cpu_seconds  # noqa: E402

WAITING = 480
PRINTING = 20
STARTS = 10
CPU_SECONDS = 10.0
KEYS = 200
ROWS, COLS = 40, 120
SELECTION = "▸".encode()
AIMS = {"cpu_percent": 2.0, "key_p99_ms": 16.0, "start_ms": 150.0, "idle_cpu_percent": 0.0}


class HubOnPty:
    """The hub on a pty of its own; a thread keeps every chunk it writes, timed."""

    def __init__(self, env, argv=None):
        master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLS, 0, 0))
        self.master = master
        self.chunks = []
        self.lock = threading.Lock()
        self.started = time.monotonic()
        self.process = subprocess.Popen(argv or [sys.executable, "-m", "roost", "hub"], stdin=slave, stdout=slave,
                                        stderr=slave, env={**env, "TERM": "xterm-256color"},
                                        start_new_session=True)
        os.close(slave)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        while True:
            try:
                data = os.read(self.master, 65536)
            except OSError:
                return
            if not data:
                return
            with self.lock:
                self.chunks.append((time.monotonic(), data))

    def first(self, marker, after):
        """When the first chunk written after `after` that holds `marker` came, or None."""
        with self.lock:
            for at, data in self.chunks:
                if at >= after and marker in data:
                    return at
        return None

    def text(self):
        with self.lock:
            return b"".join(data for _, data in self.chunks)

    def type(self, data):
        os.write(self.master, data)

    def cpu(self):
        return cpu_seconds(self.process.pid)

    def close(self):
        try:
            self.type(b"q")
            self.process.wait(10)
        except Exception:
            self.process.kill()
            self.process.wait(10)
        os.close(self.master)


def full_screen(hub):
    return wait(lambda: hub.first(b"q quit", hub.started), 30, "the hub's first full screen") - hub.started


def ping_ms(env):
    """The floor of a start-up: `python -m roost ping` to the same daemon, forked and waited."""
    started = time.monotonic()
    subprocess.run([sys.executable, "-m", "roost", "ping"], env=env, capture_output=True, check=True)
    return (time.monotonic() - started) * 1000


def cpu_percent(hub, seconds):
    before = hub.cpu()
    time.sleep(seconds)
    return round(100 * (hub.cpu() - before) / seconds, 2)


def key_latencies(hub):
    """From writing j (or k) to the first chunk after it that redraws the selection."""
    found = []
    for number in range(KEYS):
        sent = time.monotonic()
        hub.type(b"j" if number % 2 == 0 else b"k")
        at = wait(lambda: hub.first(SELECTION, sent), 10, "the selection to move", interval=0.0005)
        found.append((at - sent) * 1000)
        time.sleep(0.02)
    return found


def dispatch(daemon, command, name):
    """Each job named apart: rows that read alike let curses move the selection by
    scrolling, without drawing its glyph again."""
    return daemon.call("dispatch", kind="shell", cwd="/tmp", command=command, env={}, name=name,
                       sessionFile="", origin="dispatch")["id"]


def measure():
    daemon = Daemon()
    try:
        for number in range(WAITING):
            dispatch(daemon, ["sh", "-c", "printf 'ready> '; exec cat"], f"waits-{number:03}")
        printers = [dispatch(daemon, [sys.executable, os.path.join(ROOT, "tests", "agents", "works_a_while.py"),
                                      "3600", "0.1"], f"prints-{number:02}") for number in range(PRINTING)]
        wait(lambda: len(daemon.call("list")["jobs"]) == WAITING + PRINTING, 120, "every job listed")
        time.sleep(2.0)   # the prompts shown, the printers under way
        starts, pings, frozen_starts = [], [], []
        frozen = os.path.join(ROOT, "dist", "roost")       # scripts/build's one-file binary, when built
        for _ in range(STARTS):          # alternated, so both meet the machine as it is
            pings.append(ping_ms(daemon.env))
            for argv, into in ((None, starts), ([frozen, "hub"], frozen_starts)):
                if argv is not None and not os.access(frozen, os.X_OK):
                    continue
                hub = HubOnPty(daemon.env, argv)
                try:
                    into.append(full_screen(hub) * 1000)
                finally:
                    hub.close()
        hub = HubOnPty(daemon.env)
        try:
            full_screen(hub)
            time.sleep(1.0)
            busy = cpu_percent(hub, CPU_SECONDS)
            keys = key_latencies(hub)
            for job_id in printers:
                daemon.call("stop", id=job_id)
            time.sleep(2.0)
            idle = cpu_percent(hub, CPU_SECONDS)
            screen_bytes = len(hub.text())
        finally:
            hub.close()
        return {
            "jobs": WAITING + PRINTING, "printing": PRINTING, "size": f"{COLS}x{ROWS}",
            "start_ms": {"median": round(statistics.median(starts), 1), "max": round(max(starts), 1)},
            "ping_ms": {"median": round(statistics.median(pings), 1)},
            "frozen_start_ms": ({"median": round(statistics.median(frozen_starts), 1), "max": round(max(frozen_starts), 1)}
                                if frozen_starts else None),
            "cpu_percent": busy, "idle_cpu_percent": idle,
            "key_ms": {"p50": round(percentile(keys, 0.5), 2), "p99": round(percentile(keys, 0.99), 2),
                       "max": round(max(keys), 2)},
            "bytes_written": screen_bytes,
        }
    finally:
        daemon.close()


def _aim(value, aim, unit):
    return f"{aim:g} {unit}: {'met' if value <= aim else 'missed'}"


def report(figures):
    start, key = figures["start_ms"], figures["key_ms"]
    return "\n".join([
        "| measure | figure | aim |", "|---|---:|---|",
        f"| start-up of `python -m roost hub` to its first full screen (median / max of {STARTS}) | "
        f"{start['median']} / {start['max']} ms | {_aim(start['median'], AIMS['start_ms'], 'ms')} |",
        *([f"| start-up of `dist/roost hub` (the one-file binary) to its first full screen (median / max) | "
           f"{figures['frozen_start_ms']['median']} / {figures['frozen_start_ms']['max']} ms | "
           f"{_aim(figures['frozen_start_ms']['median'], AIMS['start_ms'], 'ms')} |"]
          if figures.get("frozen_start_ms") else []),
        f"| the floor: `python -m roost ping` in the same rounds (median) | {figures['ping_ms']['median']} ms | |",
        f"| the hub's CPU, {figures['printing']} of {figures['jobs']} rows changing (over {CPU_SECONDS:.0f} s) | "
        f"{figures['cpu_percent']} % | {_aim(figures['cpu_percent'], AIMS['cpu_percent'], '%')} |",
        f"| a key (j/k) to the screen's change, p50 / p99 / max of {KEYS} | "
        f"{key['p50']} / {key['p99']} / {key['max']} ms | {_aim(key['p99'], AIMS['key_p99_ms'], 'ms')} (p99) |",
        f"| the hub's CPU with nothing changing (over {CPU_SECONDS:.0f} s) | {figures['idle_cpu_percent']} % | "
        f"{_aim(figures['idle_cpu_percent'], AIMS['idle_cpu_percent'], '%')} |",
        "", f"On a pty of {figures['size']} read by a thread of the bench (no terminal emulator drawing it); "
        f"{figures['jobs']} jobs: {figures['jobs'] - figures['printing']} waiting at a prompt, "
        f"{figures['printing']} printing a line every 100 ms (the daemon pushes changed rows at most every "
        "200 ms). A key's time runs from writing it to the pty to the first chunk the hub writes back that "
        "redraws the selection's glyph. Start-up is from the fork, through the connection, `subscribe`, "
        "`list` of 500 rows, the feed and the board, to the keys' line, the last of the first screen.",
    ])


if __name__ == "__main__":
    import json

    result = measure()
    print(json.dumps(result, indent=1))
    print(report(result))
