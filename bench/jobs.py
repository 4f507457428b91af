"""Jobs under load: what 200 idle terminal jobs cost the daemon and the keeper (memory,
idle CPU), how soon a spawned `cat` shows its first output, ping's latency on
another connection while 20 jobs print as fast as they can, and a daemon killed while
it holds 200 jobs (20 of them flooding) adopting them (`adoption_under_flood`).

Memory per job is the slope of the daemon's RSS over 0, 100 and 200 idle jobs added to
a daemon that already runs a few (so the modules a first job imports, a one-time cost,
are not spread over the jobs); the growth from an empty daemon is shown beside it. The
flood is measured in ROUNDS rounds, each with 20 new jobs: the machine is shared, so one
round says little.

    .venv/bin/python bench/jobs.py          # prints the figures
"""

import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from roost.keeper.spawn import spawn_on_pty  # noqa: E402
from roost.client.connection import Client  # noqa: E402
from benchkit import code_root, daemon_env, wait  # noqa: E402

IDLE_JOBS = 200
WARM_JOBS = 10
ROUNDS = 3
FLOODERS = 20
IDLE_SECONDS = 10.0
PINGS = 2000
SPAWNS = 30
ADOPTED_JOBS = 200
ADOPTED_FLOODERS = 20
ADOPTION_ROUNDS = 3
CLOCK = os.sysconf("SC_CLK_TCK")




class Daemon:
    def __init__(self):
        self.base = tempfile.mkdtemp(prefix="rb-", dir="/tmp")
        self.home = os.path.join(self.base, "h")
        self.env = daemon_env(ROOST_HOME=self.home)
        self.log = open(os.path.join(self.base, "daemon.err"), "wb")
        self.process = subprocess.Popen([sys.executable, "-m", "roost", "daemon", "--foreground"],
                                        env=self.env, cwd=code_root(), stdout=self.log,
                                        stderr=subprocess.STDOUT,
                                        start_new_session=True)
        self.socket = os.path.join(self.home, "roost.sock")
        self.client = wait(self._connect, 15, "the daemon")

    def _connect(self):
        try:
            return Client.connect(self.socket, timeout=60)
        except OSError:
            return None

    def call(self, op, **args):
        return self.client.call(op, args)

    def keeper_pid(self):
        with open(os.path.join(self.home, "keeper.lock")) as handle:
            return int(handle.read().split()[0])

    def close(self):
        try:
            self.call("shutdown")
            self.process.wait(60)
        except Exception:
            self.process.kill()
        self.log.close()
        shutil.rmtree(self.base, ignore_errors=True)


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK


def dispatch(daemon, command):
    return daemon.call("dispatch", kind="shell", cwd="/tmp", command=command, env={}, name="",
                       sessionFile="", origin="dispatch")["id"]


def _all_waiting(daemon, count):
    def check():
        jobs = daemon.call("list")["jobs"]
        return len(jobs) == count and all(row["state"] == "blocked" for row in jobs)
    wait(check, 60, "every job to wait")
    time.sleep(1.0)   # let the allocator settle before reading memory


def idle_jobs(daemon):
    """200 terminal jobs showing a prompt and waiting on input, as idle agents do."""
    pid = daemon.process.pid
    command = ["sh", "-c", "printf 'ready> '; exec cat"]
    daemon.call("list")
    time.sleep(1.0)   # its start-up done (the keeper, the ops) before the first reading
    empty_rss = rss_kib(pid)
    for _ in range(WARM_JOBS):
        dispatch(daemon, command)
    _all_waiting(daemon, WARM_JOBS)
    points = [(0, rss_kib(pid))]
    dispatching = 0.0
    for step in (1, 2):
        started = time.monotonic()
        for _ in range(IDLE_JOBS // 2):
            dispatch(daemon, command)
        dispatching += time.monotonic() - started
        _all_waiting(daemon, WARM_JOBS + step * IDLE_JOBS // 2)
        points.append((step * IDLE_JOBS // 2, rss_kib(pid)))
    spawn_rate = IDLE_JOBS / dispatching
    rss = points[-1][1]
    keeper = daemon.keeper_pid()
    before = cpu_seconds(pid), cpu_seconds(keeper)
    time.sleep(IDLE_SECONDS)
    after = cpu_seconds(pid), cpu_seconds(keeper)
    halves = [round((b[1] - a[1]) / (b[0] - a[0]), 1) for a, b in zip(points, points[1:])]
    return {
        "jobs": IDLE_JOBS + WARM_JOBS,
        "daemon_rss_empty_kib": empty_rss,
        "daemon_rss_points_kib": points,
        "daemon_rss_kib": rss,
        "daemon_kib_per_job": round((points[-1][1] - points[0][1]) / IDLE_JOBS, 1),
        "daemon_kib_per_job_halves": halves,
        "daemon_kib_per_job_from_empty": round((rss - empty_rss) / (IDLE_JOBS + WARM_JOBS), 1),
        "keeper_rss_kib": rss_kib(keeper),
        "daemon_idle_cpu_percent": round(100 * (after[0] - before[0]) / IDLE_SECONDS, 2),
        "keeper_idle_cpu_percent": round(100 * (after[1] - before[1]) / IDLE_SECONDS, 2),
        "dispatch_per_second": round(spawn_rate, 1),
    }


def spawn_to_output(daemon):
    """From sending `dispatch` to the daemon having read `cat`'s first output (its log
    has it), and the keeper's part alone (spawn to the master readable)."""
    sample = os.path.join(daemon.base, "sample.txt")
    with open(sample, "w") as handle:
        handle.write("first output\n")
    whole = []
    for _ in range(SPAWNS):
        started = time.perf_counter()
        job_id = daemon.call("dispatch", kind="shell", cwd="/tmp", command=["cat", sample], env={},
                             name="", sessionFile="", origin="dispatch")["id"]
        log = os.path.join(daemon.home, "jobs", job_id, "output.log")
        while True:
            try:
                if os.path.getsize(log):
                    break
            except OSError:
                pass
            time.sleep(0.0002)
        whole.append((time.perf_counter() - started) * 1000)
    keeper_only = []
    for _ in range(SPAWNS):
        started = time.perf_counter()
        pid, master = spawn_on_pty(["cat", sample], dict(os.environ), "/tmp", 0o022, 40, 120)
        os.read(master, 100)
        keeper_only.append((time.perf_counter() - started) * 1000)
        os.waitpid(pid, 0)
        os.close(master)
    return {
        "dispatch_to_first_output_ms_median": round(statistics.median(whole), 2),
        "dispatch_to_first_output_ms_p90": round(sorted(whole)[int(len(whole) * 0.9)], 2),
        "keeper_spawn_to_first_output_ms_median": round(statistics.median(keeper_only), 2),
    }


def ping_under_flood(daemon):
    ids = [dispatch(daemon, ["sh", "-c", "while :; do echo 'a line of output, as agents print them'; done"])
           for _ in range(FLOODERS)]
    time.sleep(1.0)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(daemon.socket)
    reader = sock.makefile("rb")
    latencies = []
    started = time.monotonic()
    for index in range(PINGS):
        sent = time.perf_counter()
        sock.sendall(b'{"id":%d,"op":"ping"}\n' % index)
        reader.readline()
        latencies.append((time.perf_counter() - sent) * 1000)
    seconds = time.monotonic() - started
    sock.close()
    parts = [os.path.join(daemon.home, "jobs", job_id, name) for job_id in ids for name in ("output.log", "output.log.1")]
    logged = sum(os.path.getsize(path) for path in parts if os.path.exists(path))
    for job_id in ids:
        daemon.call("stop", id=job_id)
        daemon.call("rm", id=job_id)
    latencies.sort()
    return {
        "flooding_jobs": FLOODERS,
        "ping_ms_median": round(statistics.median(latencies), 3),
        "ping_ms_p99": round(latencies[int(len(latencies) * 0.99)], 3),
        "ping_ms_max": round(latencies[-1], 3),
        "pings_seconds": round(seconds, 2),
        "logged_mib": round(logged / 2**20, 1),
    }


def adoption_under_flood(daemon):
    """A daemon killed (SIGKILL) while it holds 200 jobs, 20 of them flooding, and a new
    one started, ADOPTION_ROUNDS times over the same jobs: from its start to the socket
    taking connections and to its first answer (a ping: adoption comes before it), then
    until every job's screen is current (a `peek` of each, which feeds what waits first),
    and meanwhile the longest wait of a ping sent every 2 ms on another connection: the
    loop's longest pause, as a client meets it."""
    idle = ["sh", "-c", "printf 'ready> '; exec cat"]
    flood = ["sh", "-c", "while :; do echo 'a line of output, as agents print them'; done"]
    ids = [dispatch(daemon, flood if index < ADOPTED_FLOODERS else idle) for index in range(ADOPTED_JOBS)]
    wait(lambda: all(row["pid"] for row in daemon.call("list")["jobs"]), 120, "every job to run")
    rounds = [_adopt_once(daemon, ids) for _ in range(ADOPTION_ROUNDS)]
    for job_id in ids:
        daemon.call("stop", id=job_id)
        daemon.call("rm", id=job_id)
    figures = {"jobs": ADOPTED_JOBS, "flooding": ADOPTED_FLOODERS, "rounds": rounds}
    for key in ("start_to_connect_ms", "start_to_answer_ms", "answer_to_current_ms", "ping_ms_p99", "ping_ms_max"):
        figures[key] = _spread(rounds, key)
    return figures


def _adopt_once(daemon, ids):
    time.sleep(2.0)                       # the floods fill their logs and ptys meanwhile
    daemon.process.kill()
    daemon.process.wait(10)
    daemon.client.close()
    started = time.monotonic()
    daemon.process = subprocess.Popen([sys.executable, "-m", "roost", "daemon", "--foreground"],
                                      env=daemon.env, cwd=code_root(), stdout=daemon.log,
                                      stderr=subprocess.STDOUT,
                                      start_new_session=True)
    daemon.client = wait(daemon._connect, 60, "the new daemon")
    connected = time.monotonic()
    daemon.call("ping")                   # the socket is bound before the jobs are adopted
    answered = time.monotonic()
    pings, overslept, stop = [], [], []

    def pinger():
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(daemon.socket)
        reader = sock.makefile("rb")
        while not stop:
            sent = time.perf_counter()
            sock.sendall(b'{"id":1,"op":"ping"}\n')
            reader.readline()
            pings.append((time.perf_counter() - sent) * 1000)
            before = time.perf_counter()
            time.sleep(0.002)
            overslept.append((time.perf_counter() - before - 0.002) * 1000)
        sock.close()

    import threading
    thread = threading.Thread(target=pinger)
    thread.start()
    for job_id in ids:
        daemon.call("peek", id=job_id)
    current = time.monotonic()
    stop.append(True)
    thread.join(10)
    pings.sort()
    return {"start_to_connect_ms": round((connected - started) * 1000),
            "start_to_answer_ms": round((answered - started) * 1000),
            "answer_to_current_ms": round((current - answered) * 1000),
            "ping_ms_p99": round(pings[int(len(pings) * 0.99)], 2) if pings else None,
            "ping_ms_max": round(pings[-1], 2) if pings else None, "pings": len(pings),
            "pinger_overslept_ms_max": round(max(overslept), 2) if overslept else None}


def _spread(rounds, key):
    values = sorted(round_[key] for round_ in rounds)
    return {"median": values[len(values) // 2], "min": values[0], "max": values[-1]}


def measure():
    figures = {}
    daemon = Daemon()
    try:
        figures["spawn"] = spawn_to_output(daemon)
        rounds = [ping_under_flood(daemon) for _ in range(ROUNDS)]
        figures["flood"] = {"rounds": rounds, **{key: _spread(rounds, key) for key in
                                                  ("ping_ms_median", "ping_ms_p99", "ping_ms_max")}}
    finally:
        daemon.close()
    daemon = Daemon()
    try:
        figures["idle"] = idle_jobs(daemon)
    finally:
        daemon.close()
    daemon = Daemon()
    try:
        figures["adoption"] = adoption_under_flood(daemon)
    finally:
        daemon.close()
    return figures


def report(figures):
    idle, spawn, flood = figures["idle"], figures["spawn"], figures["flood"]

    def spread(key, unit=" ms"):
        value = flood[key]
        return f"{value['median']}{unit} ({value['min']}-{value['max']})"

    return "\n".join([
        "| measure | figure | aim |",
        "|---|---|---|",
        f"| daemon memory per idle terminal job: RSS slope over 0/100/200 jobs (each half) | "
        f"{idle['daemon_kib_per_job']} KiB ({' / '.join(map(str, idle['daemon_kib_per_job_halves']))}) | < 30 KB |",
        f"| ... RSS growth from an empty daemon, per job (the first job's imports included) | "
        f"{idle['daemon_kib_per_job_from_empty']} KiB | |",
        f"| daemon RSS empty / with {idle['jobs']} jobs | {idle['daemon_rss_empty_kib']} / {idle['daemon_rss_kib']} KiB | |",
        f"| keeper RSS with {idle['jobs']} jobs | {idle['keeper_rss_kib']} KiB | |",
        f"| daemon idle CPU over {IDLE_SECONDS:.0f} s with {idle['jobs']} jobs | {idle['daemon_idle_cpu_percent']} % | near 0 |",
        f"| keeper idle CPU | {idle['keeper_idle_cpu_percent']} % | near 0 |",
        f"| dispatches per second (one client) | {idle['dispatch_per_second']} | |",
        f"| `dispatch` sent to `cat`'s first output read by the daemon (median / p90) | "
        f"{spawn['dispatch_to_first_output_ms_median']} / {spawn['dispatch_to_first_output_ms_p90']} ms | 6 ms |",
        f"| the keeper's spawn to `cat`'s first output (median) | {spawn['keeper_spawn_to_first_output_ms_median']} ms | |",
        f"| ping p99 with {FLOODERS} jobs flooding: median of {ROUNDS} rounds (min-max) | {spread('ping_ms_p99')} | < 50 ms |",
        f"| ... ping median / longest | {spread('ping_ms_median')} / {spread('ping_ms_max')} | |",
        f"| output log kept at the end of each round (both parts, all jobs) | {', '.join(str(round_['logged_mib']) for round_ in flood['rounds'])} MiB | |",
        *_adoption_rows(figures.get("adoption")),
    ])


def _adoption_rows(adoption):
    if not adoption or "rounds" not in adoption:
        return []

    def spread(key):
        value = adoption[key]
        return f"{value['median']} ({value['min']}-{value['max']})"

    return [
        f"| a daemon adopting {adoption['jobs']} jobs ({adoption['flooding']} flooding) after kill -9, "
        f"median of {len(adoption['rounds'])} rounds (min-max): start to the socket taking connections / "
        f"to its first answer / then to every screen current | {spread('start_to_connect_ms')} / "
        f"{spread('start_to_answer_ms')} / {spread('answer_to_current_ms')} ms | |",
        f"| ... meanwhile a ping every 2 ms: p99 / longest (the loop's longest pause) | "
        f"{spread('ping_ms_p99')} / {spread('ping_ms_max')} ms | longest < 20 ms |",
    ]


if __name__ == "__main__":
    import json

    result = measure()
    print(json.dumps(result, indent=2))
    print(report(result))


def headline(figures):
    """The figures `run.py --beside` puts side by side: (what, its text)."""
    adoption = figures.get("adoption")
    if not adoption:
        return []
    return [("adopting 200 jobs (20 flooding): the loop's longest pause, median of rounds (ms)",
             "{median} ({min}-{max})".format(**adoption["ping_ms_max"])),
            ("... start to every screen current (ms)",
             f"{adoption['start_to_answer_ms']['median'] + adoption['answer_to_current_ms']['median']}")]
