"""A job's terminal: output throughput through one pty and how long the daemon's loop
pauses while one job floods.

- throughput: `cat` of a file on a pty, through Terminal's pump into the job's log (and
  the screen, which skips ahead), against `cat` of the same bytes to a file;
- loop pauses: a 1 ms gevent timer ticks while one job prints as fast as it can; the
  longest gap between ticks is how long one job held the loop; then the same with 20
  jobs flooding at once (how long a request on another connection could wait). Each is
  measured ROUNDS times (the machine is shared: one run says little);
- the flight recorder (roost.jobs.timeline, issue 19): what one state change costs (its
  entry built with the 40x120 screen's text, encoded and appended, rotations included),
  and the same flood with the recorder listening to every reading the screen gives, as
  the daemon's registry does (a reading that changes no state is looked at and dropped).

As in the daemon, the hub's threadpool is started first (the daemon's state files'
fsyncs start it; its first use costs ~10 ms once, not what a flood costs) and the
modules' objects are frozen out of the collector's way (roost.daemon.main: gc.freeze()).

    .venv/bin/python bench/terminal.py      # prints the figures
"""

import contextlib
import gc
import json
import os
import pty
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import gevent  # noqa: E402

from roost.clock import Clock  # noqa: E402
from roost.jobs.registry import JobRegistry  # noqa: E402
from roost.jobs.timeline import Timelines  # noqa: E402
from roost.term.terminal import Terminal  # noqa: E402

SIZE = 48 * 1024 * 1024
ROUNDS = 3
PEEK_EVERY = 0.05             # seconds between screen reads in the peeked flood


def _make_source(directory):
    """Text a program would print: numbered lines with a little colour now and then."""
    path = os.path.join(directory, "source.txt")
    line = b"compiling module %08d: ok \x1b[32mpassed\x1b[0m " + b"." * 60 + b"\n"
    with open(path, "wb") as handle:
        written = 0
        block = b"".join(line % i for i in range(1000))
        while written < SIZE:
            handle.write(block)
            written += len(block)
    return path, written


def _spawn(argv):
    master, slave = pty.openpty()
    process = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave,
                               start_new_session=True, close_fds=True)
    os.close(slave)
    return process, master


def cat_to_file(source, directory):
    target = os.path.join(directory, "copy.txt")
    started = time.perf_counter()
    with open(target, "wb") as out:
        subprocess.run(["cat", source], stdout=out, check=True)
    return time.perf_counter() - started


def cat_through_raw_pty(source):
    """The floor a pty allows: the same `cat` read by a bare blocking loop, nothing kept."""
    process, master = _spawn(["cat", source])
    started = time.perf_counter()
    while True:
        try:
            if not os.read(master, 65536):
                break
        except OSError:
            break
    elapsed = time.perf_counter() - started
    process.wait()
    os.close(master)
    return elapsed


def _carry(carried):
    """A carry pipe, as the keeper gives a daemon (roost.term.intake), or None: output
    then is read and written, as where the kernel refuses to splice from a pty."""
    return os.pipe2(os.O_CLOEXEC) if carried else None


def cat_through_terminal(source, directory, peek_every=None, carried=True, recorded=None):
    """`peek_every` seconds, the screen is read as `roost peek` reads it. `carried`: the
    output goes through a carry pipe. `recorded`: a _Recorder that hears each reading."""
    job_dir = tempfile.mkdtemp(dir=directory)
    process, master = _spawn(["cat", source])
    terminal = Terminal("bench", master, job_dir, term={"settleMs": 200},
                        log_limit=8 * 1024 * 1024, carry=_carry(carried))
    if recorded is not None:
        recorded.watch(terminal)
    started = time.perf_counter()
    terminal.start()
    peeker = gevent.spawn(_peek_until_eof, terminal, peek_every) if peek_every else None
    terminal.eof.wait()
    if peeker is not None:
        peeker.join()
    elapsed = time.perf_counter() - started
    process.wait()
    terminal.close()
    logged = sum(os.path.getsize(os.path.join(job_dir, name)) for name in os.listdir(job_dir))
    return elapsed, logged, terminal.text(last=1)


class _Recorder:
    """A real registry's job with the timeline listening, fed each reading as the runner
    would make it a row change."""

    def __init__(self, directory):
        home = tempfile.mkdtemp(dir=directory)
        os.makedirs(os.path.join(home, "jobs"))
        self.registry = JobRegistry(home, None, Clock(gevent.spawn_later))
        self.job = self.registry.create({"name": "bench"}, {"argv": ["cat"]})
        self.timelines = Timelines(self.registry)
        self.row = self.job.row()
        self.calls = 0

    def watch(self, terminal):
        self.job.terminal = terminal
        terminal.on_change = self.reading

    def reading(self, reading):
        before, self.row = self.row, dict(self.row, **{key: reading.get(key) for key in
                                                      ("state", "status", "waitingFor", "summary")})
        self.calls += 1
        self.timelines.row_changed(self.row, before)


def timeline_per_state_change(directory, changes=3000):
    """Microseconds one state change costs the recorder, writing included."""
    process, master = _spawn(["python3", "-c", "for i in range(40): print('line %d ' % i + 'x' * 100)"])
    recorder = _Recorder(directory)
    terminal = Terminal("states", master, recorder.job.job_dir, term={"settleMs": 200})
    terminal.start()
    terminal.eof.wait()
    process.wait()
    recorder.job.terminal = terminal
    states = [{"state": "working", "status": "busy", "waitingFor": None},
              {"state": "blocked", "status": "waiting", "waitingFor": "question"}]
    started = time.perf_counter()
    for number in range(changes):
        recorder.reading(states[number % 2])
    recorder.timelines.flush()
    elapsed = time.perf_counter() - started
    kept = sum(os.path.getsize(os.path.join(recorder.job.job_dir, name))
               for name in os.listdir(recorder.job.job_dir) if name.startswith("timeline"))
    terminal.close()
    return {"us_per_change": elapsed / changes * 1e6, "kept_bytes": kept}


def timeline_in_a_flood(source, directory):
    """The flood with the recorder listening, against the same flood without it."""
    # Interleaved, the best of each: on a shared machine a run says little alone.
    bare, timed, recorders = [], [], []
    for _ in range(ROUNDS):
        bare.append(cat_through_terminal(source, directory)[0])
        recorders.append(_Recorder(directory))
        timed.append(cat_through_terminal(source, directory, recorded=recorders[-1])[0])
    return {"bare_seconds": min(bare), "recorded_seconds": min(timed), "readings": recorders[0].calls}


def _peek_until_eof(terminal, every):
    while not terminal.eof.is_set():
        terminal.text()
        gevent.sleep(every)


@contextlib.contextmanager
def loop_gaps():
    """The gaps between ticks of a 1 ms timer on the loop while the block runs."""
    gaps = []
    last = [time.perf_counter()]

    def tick():
        now = time.perf_counter()
        gaps.append(now - last[0])
        last[0] = now

    timer = gevent.get_hub().loop.timer(0.001, 0.001)
    timer.start(tick)
    try:
        yield gaps
    finally:
        timer.stop()
        timer.close()


def loop_pauses(source, directory, peek_every=None):
    """The longest gap between ticks of a 1 ms timer while one job floods."""
    with loop_gaps() as gaps:
        elapsed, logged, _ = cat_through_terminal(source, directory, peek_every)
    gaps.sort()
    return {"max_gap_ms": gaps[-1] * 1000, "p99_gap_ms": gaps[int(len(gaps) * 0.99)] * 1000,
            "ticks": len(gaps), "flood_seconds": elapsed}


def loop_pauses_many(source, directory, jobs=20, size=5 * 1024 * 1024):
    """The same timer while `jobs` jobs flood at once (each `size` bytes): how long a
    request on another connection could wait for the loop."""
    part = os.path.join(directory, "part.txt")
    with open(source, "rb") as handle, open(part, "wb") as out:
        out.write(handle.read(size))
    # Spawned first (forking blocks the loop, which is not what is measured here): each
    # fills its pty and waits for the reading to begin.
    spawned = [_spawn(["cat", part]) for _ in range(jobs)]
    started = time.perf_counter()
    running = []
    with loop_gaps() as gaps:
        for number, (process, master) in enumerate(spawned):
            terminal = Terminal(f"flood{number}", master, tempfile.mkdtemp(dir=directory),
                                term={"settleMs": 200}, carry=_carry(True))
            running.append((process, terminal.start()))
        for process, terminal in running:
            terminal.eof.wait()
            process.wait()
            terminal.close()
    elapsed = time.perf_counter() - started
    gaps.sort()
    return {"jobs": jobs, "total_mb_s": jobs * size / elapsed / 1e6,
            "max_gap_ms": gaps[-1] * 1000, "p99_gap_ms": gaps[int(len(gaps) * 0.99)] * 1000,
            "p50_gap_ms": gaps[len(gaps) // 2] * 1000}


def _spread(values):
    values = sorted(values)
    return {"median": values[len(values) // 2], "min": values[0], "max": values[-1]}


def measure():
    directory = tempfile.mkdtemp(prefix="roost-bench-term-")
    gevent.get_hub().threadpool.apply(os.getpid)
    gc.collect()
    gc.freeze()
    try:
        source, size = _make_source(directory)
        cat_to_file(source, directory)                       # warm the page cache
        file_seconds = min(cat_to_file(source, directory) for _ in range(3))
        raw_seconds = min(cat_through_raw_pty(source) for _ in range(2))
        runs = [cat_through_terminal(source, directory) for _ in range(2)]
        terminal_seconds = min(run[0] for run in runs)
        uncarried_seconds = min(cat_through_terminal(source, directory, carried=False)[0] for _ in range(2))
        pauses = [loop_pauses(source, directory) for _ in range(ROUNDS)]
        peeked = [loop_pauses(source, directory, PEEK_EVERY) for _ in range(ROUNDS)]
        many = [loop_pauses_many(source, directory) for _ in range(ROUNDS)]
        per_change = timeline_per_state_change(directory)
        flood = timeline_in_a_flood(source, directory)
        mib = size / 2**20
        return {
            "timeline_us_per_state_change": per_change["us_per_change"],
            "timeline_kept_bytes": per_change["kept_bytes"],
            "timeline_readings_per_mib": flood["readings"] / mib,
            "timeline_flood_mb_s": size / flood["recorded_seconds"] / 1e6,
            "timeline_bare_flood_mb_s": size / flood["bare_seconds"] / 1e6,
            # What the recorder's work per MiB is of the time the terminal takes per MiB.
            "timeline_share_per_mib": (flood["readings"] / mib * per_change["us_per_change"] / 1e6)
            / (terminal_seconds / mib),
            "bytes": size,
            "cat_to_file_mb_s": size / file_seconds / 1e6,
            "terminal_mb_s": size / terminal_seconds / 1e6,
            "terminal_vs_cat": file_seconds / terminal_seconds,
            "raw_pty_mb_s": size / raw_seconds / 1e6,
            "terminal_vs_raw_pty": raw_seconds / terminal_seconds,
            "uncarried_mb_s": size / uncarried_seconds / 1e6,
            "log_bytes_kept": runs[0][1],
            "last_screen_line": runs[0][2],
            "loop_max_gap_ms": _spread([run["max_gap_ms"] for run in pauses]),
            "loop_p99_gap_ms": _spread([run["p99_gap_ms"] for run in pauses]),
            "loop_ticks": pauses[0]["ticks"],
            "peeked_max_gap_ms": _spread([run["max_gap_ms"] for run in peeked]),
            "peeked_p99_gap_ms": _spread([run["p99_gap_ms"] for run in peeked]),
            "twenty_floods_total_mb_s": _spread([run["total_mb_s"] for run in many]),
            "twenty_floods_max_gap_ms": _spread([run["max_gap_ms"] for run in many]),
            "twenty_floods_p99_gap_ms": _spread([run["p99_gap_ms"] for run in many]),
            "twenty_floods_p50_gap_ms": _spread([run["p50_gap_ms"] for run in many]),
        }
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def report(figures):
    def spread(key, digits=1):
        value = figures[key]
        return f"{value['median']:.{digits}f} ({value['min']:.{digits}f}-{value['max']:.{digits}f})"

    return "\n".join([
        "| what | figure |",
        "|---|---|",
        f"| `cat` of {figures['bytes'] / 2**20:.0f} MiB to a file | {figures['cat_to_file_mb_s']:.0f} MB/s |",
        f"| the same `cat` on a pty through Terminal (log + screen) | {figures['terminal_mb_s']:.0f} MB/s "
        f"({figures['terminal_vs_cat'] * 100:.0f}% of the file) |",
        f"| the same `cat` on a pty read by a bare loop (the pty's own limit) | {figures['raw_pty_mb_s']:.0f} MB/s |",
        f"| Terminal against the bare pty loop | {figures['terminal_vs_raw_pty'] * 100:.0f}% |",
        f"| the same Terminal without a carry pipe (read, then written: what a daemon killed "
        f"between the two loses) | {figures['uncarried_mb_s']:.0f} MB/s |",
        f"| log kept (limit 8 MiB) | {figures['log_bytes_kept'] / 2**20:.1f} MiB |",
        f"| loop's longest pause while one job floods (1 ms timer; median of {ROUNDS} runs, min-max; aim < 10 ms) | "
        f"{spread('loop_max_gap_ms')} ms |",
        f"| loop's p99 gap while one job floods | {spread('loop_p99_gap_ms')} ms |",
        f"| ... the same while its screen is read (`peek`) every {PEEK_EVERY * 1000:.0f} ms: longest / p99 | "
        f"{spread('peeked_max_gap_ms')} / {spread('peeked_p99_gap_ms')} ms |",
        f"| 20 jobs flooding at once (5 MiB each): total | {spread('twenty_floods_total_mb_s', 0)} MB/s |",
        f"| ... the loop's gaps: p50 / p99 / longest | {spread('twenty_floods_p50_gap_ms')} / "
        f"{spread('twenty_floods_p99_gap_ms')} / {spread('twenty_floods_max_gap_ms')} ms |",
        f"| the timeline: one state change (entry with the 40x120 screen, encoded, appended; "
        f"rotation at 512 KiB) | {figures['timeline_us_per_state_change']:.0f} us "
        f"({figures['timeline_kept_bytes'] / 1024:.0f} KiB kept of 3000) |",
        f"| ... readings it hears per MiB of a flood / their cost at that price, of the terminal's "
        f"time per MiB (aim < 2%) | {figures['timeline_readings_per_mib']:.2f} / "
        f"{figures['timeline_share_per_mib'] * 100:.3f}% |",
        f"| ... the flood with the timeline listening / without (best of {ROUNDS} interleaved runs each) | "
        f"{figures['timeline_flood_mb_s']:.0f} / {figures['timeline_bare_flood_mb_s']:.0f} MB/s |",
    ])


if __name__ == "__main__":
    result = measure()
    print(json.dumps(result, indent=1))
    print(report(result))
