"""Jobs under load: what 200 idle terminal jobs cost the daemon and the keeper (memory,
idle CPU), how soon a spawned `cat` shows its first output, and ping's latency on
another connection while 20 jobs print as fast as they can.

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

from roost import keeper as keeper_module  # noqa: E402
from roost.client import Client  # noqa: E402

IDLE_JOBS = 200
FLOODERS = 20
IDLE_SECONDS = 10.0
PINGS = 2000
SPAWNS = 30
CLOCK = os.sysconf("SC_CLK_TCK")


def _wait(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(0.02)


class Daemon:
    def __init__(self):
        self.base = tempfile.mkdtemp(prefix="rb-", dir="/tmp")
        self.home = os.path.join(self.base, "h")
        self.env = {**os.environ, "ROOST_HOME": self.home, "PYTHONPATH": ROOT}
        self.env.pop("ROOST_SOCKET", None)
        self.log = open(os.path.join(self.base, "daemon.err"), "wb")
        self.process = subprocess.Popen([sys.executable, "-m", "roost", "daemon", "--foreground"],
                                        env=self.env, stdout=self.log, stderr=subprocess.STDOUT,
                                        start_new_session=True)
        self.socket = os.path.join(self.home, "roost.sock")
        self.client = _wait(self._connect, 15, "the daemon")

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


def idle_jobs(daemon):
    """200 terminal jobs showing a prompt and waiting on input, as idle agents do."""
    pid = daemon.process.pid
    base_rss = rss_kib(pid)
    started = time.monotonic()
    ids = [dispatch(daemon, ["sh", "-c", "printf 'ready> '; exec cat"]) for _ in range(IDLE_JOBS)]
    spawn_rate = IDLE_JOBS / (time.monotonic() - started)
    _wait(lambda: all(row["state"] == "blocked" for row in daemon.call("list")["jobs"]), 60,
          "every job to wait")
    time.sleep(1.0)   # let the allocator settle before reading memory
    rss = rss_kib(pid)
    keeper = daemon.keeper_pid()
    before = cpu_seconds(pid), cpu_seconds(keeper)
    time.sleep(IDLE_SECONDS)
    after = cpu_seconds(pid), cpu_seconds(keeper)
    return {
        "jobs": len(ids),
        "daemon_rss_base_kib": base_rss,
        "daemon_rss_kib": rss,
        "daemon_kib_per_job": round((rss - base_rss) / IDLE_JOBS, 1),
        "keeper_rss_kib": rss_kib(keeper),
        "daemon_idle_cpu_percent": round(100 * (after[0] - before[0]) / IDLE_SECONDS, 2),
        "keeper_idle_cpu_percent": round(100 * (after[1] - before[1]) / IDLE_SECONDS, 2),
        "dispatch_per_second": round(spawn_rate, 1),
    }, ids


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
        pid, master = keeper_module.spawn_on_pty(["cat", sample], dict(os.environ), "/tmp", 0o022, 40, 120)
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
    for index in range(PINGS):
        started = time.perf_counter()
        sock.sendall(b'{"id":%d,"op":"ping"}\n' % index)
        reader.readline()
        latencies.append((time.perf_counter() - started) * 1000)
    sock.close()
    logged = sum(os.path.getsize(os.path.join(daemon.home, "jobs", job_id, "output.log")) for job_id in ids)
    for job_id in ids:
        daemon.call("stop", id=job_id)
    latencies.sort()
    return {
        "flooding_jobs": FLOODERS,
        "ping_ms_median": round(statistics.median(latencies), 3),
        "ping_ms_p99": round(latencies[int(len(latencies) * 0.99)], 3),
        "ping_ms_max": round(latencies[-1], 3),
        "logged_mib": round(logged / 2**20, 1),
    }


def measure():
    figures = {}
    daemon = Daemon()
    try:
        figures["spawn"] = spawn_to_output(daemon)
        figures["flood"] = ping_under_flood(daemon)
    finally:
        daemon.close()
    daemon = Daemon()
    try:
        figures["idle"], _ = idle_jobs(daemon)
    finally:
        daemon.close()
    return figures


def report(figures):
    idle, spawn, flood = figures["idle"], figures["spawn"], figures["flood"]
    return "\n".join([
        "| measure | figure | aim |",
        "|---|---|---|",
        f"| daemon memory per idle terminal job ({idle['jobs']} jobs) | {idle['daemon_kib_per_job']} KiB | < 30 KB |",
        f"| daemon RSS before / with {idle['jobs']} jobs | {idle['daemon_rss_base_kib']} / {idle['daemon_rss_kib']} KiB | |",
        f"| keeper RSS with {idle['jobs']} jobs | {idle['keeper_rss_kib']} KiB | |",
        f"| daemon idle CPU over {IDLE_SECONDS:.0f} s with {idle['jobs']} jobs | {idle['daemon_idle_cpu_percent']} % | near 0 |",
        f"| keeper idle CPU | {idle['keeper_idle_cpu_percent']} % | near 0 |",
        f"| dispatches per second (one client) | {idle['dispatch_per_second']} | |",
        f"| `dispatch` sent to `cat`'s first output read by the daemon (median / p90) | "
        f"{spawn['dispatch_to_first_output_ms_median']} / {spawn['dispatch_to_first_output_ms_p90']} ms | 6 ms |",
        f"| the keeper's spawn to `cat`'s first output (median) | {spawn['keeper_spawn_to_first_output_ms_median']} ms | |",
        f"| ping with {flood['flooding_jobs']} jobs flooding (median / p99 / max) | "
        f"{flood['ping_ms_median']} / {flood['ping_ms_p99']} / {flood['ping_ms_max']} ms | p99 < 50 ms |",
        f"| output logged meanwhile | {flood['logged_mib']} MiB | |",
    ])


if __name__ == "__main__":
    import json

    result = measure()
    print(json.dumps(result, indent=2))
    print(report(result))
