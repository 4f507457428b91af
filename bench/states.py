"""Honest states (issue 27): what the kernel's word on a job costs.

- per evaluation: one look at a job's processes (roost.unix.terminal_waits) in this
  process, for programs of several shapes, beside the floor of one /proc/<pid>/stat read;
  and through a real keeper (`probe` on its socket, as the daemon asks it) beside its
  `hello` round trip, with the keeper's own CPU per probe.
- 500 idle jobs: the daemon's and the keeper's CPU while 500 quiet plain jobs (half
  reading their terminal, half asleep) are looked at again with backoff, beside the same
  500 jobs under a profile whose waiting pattern reads them from the screen (no look
  again): the floor, measured in the same run. Aim: under 2 % of one core.

    .venv/bin/python bench/states.py          # prints the figures
"""

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:0] = [HERE, ROOT]

from benchkit import code_root, daemon_env, percentile, wait  # noqa: E402
from jobs import Daemon, cpu_seconds  # noqa: E402
from roost.keeper import admission  # noqa: E402
from roost.keeper import wire as keeper_wire  # noqa: E402
from roost.unix import pidlock  # noqa: E402
from roost.unix.terminal_waits import Prober  # noqa: E402

LOOKS = 300
IDLE_JOBS = 500
RAMP_S = 70.0          # the looks again reach their longest interval (after 1+2+4+8+16+32 s)
WINDOW_S = 120.0       # two looks again of each job, at 60 s apart
SHAPES = {
    "sh reading its terminal": ["sh", "-c", "printf 'name? '; read x"],
    "sh and its sleep": ["sh", "-c", "while true; do sleep 5; done"],
    "a pipeline of 3": ["sh", "-c", "(read x) | cat | cat"],
    "node readline (epoll, 11 threads)": ["node", "-e", "require('readline').createInterface("
                                          "{input: process.stdin}).question('q? ', () => {})"],
}


def _timed(action, count):
    times = []
    for _ in range(count):
        started = time.perf_counter()
        action()
        times.append((time.perf_counter() - started) * 1e6)
    return {"median_us": round(percentile(times, 0.5)), "p90_us": round(percentile(times, 0.9))}


def _on_pty(argv):
    master, slave = os.openpty()
    process = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, start_new_session=True)
    os.close(slave)
    return process, master


def looks_here():
    """A look at each shape's processes in this process, and the floor."""
    figures, prober = {}, Prober()
    for name, argv in SHAPES.items():
        if shutil.which(argv[0]) is None:
            continue
        process, master = _on_pty(argv)
        try:
            time.sleep(1.0)
            evidence = prober.probe_master(process.pid, master)
            figures[name] = dict(_timed(lambda: prober.probe_master(process.pid, master), LOOKS),
                                 verdict=evidence["verdict"], processes=evidence["processes"])
            figures["floor: one /proc/<pid>/stat read"] = _timed(lambda: _read(f"/proc/{process.pid}/stat"), LOOKS)
        finally:
            process.kill()
            process.wait()
            os.close(master)
    figures["processes on the machine"] = sum(1 for name in os.listdir("/proc") if name.isdigit())
    return figures


def _read(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.read(fd, 4096)
    finally:
        os.close(fd)


class RawKeeper:
    """A keeper of a temp home, spoken to as the daemon does (JSON lines): this process
    holds the home's daemon.lock and proves itself with the secret (roost.keeper.admission)."""

    def __init__(self):
        self.base = tempfile.mkdtemp(prefix="rb-", dir="/tmp")
        self.home = os.path.join(self.base, "h")
        os.makedirs(self.home)
        self.lock = pidlock.take(os.path.join(self.home, admission.DAEMON_LOCK))
        self.secret = admission.ensure_secret(self.home)
        self.process = subprocess.Popen([sys.executable, "-m", "roost", "keeper", "--home", self.home],
                                        env=daemon_env(ROOST_HOME=self.home), cwd=code_root(),
                                        stdin=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True)
        self.process.stdin.write(self.secret.encode("ascii") + b"\n")
        self.process.stdin.close()
        self.sock = wait(self._connect, 15, "the keeper")
        self.buffer, self.ids = b"", 0

    def hello(self):
        return self.call({"op": "hello", "version": keeper_wire.VERSION, "secret": self.secret})

    def _connect(self):
        sock = socket.socket(socket.AF_UNIX)
        try:
            sock.connect(os.path.join(self.home, "keeper.sock"))
            return sock
        except OSError:
            sock.close()
            return None

    def call(self, message):
        self.ids += 1
        self.sock.sendall(json.dumps(dict(message, id=self.ids)).encode() + b"\n")
        while b"\n" not in self.buffer:
            data, ancillary, _, _ = self.sock.recvmsg(65536, socket.CMSG_SPACE(64))
            for _level, _kind, payload in ancillary:      # the spawn's master: kept open by the keeper
                for index in range(0, len(payload) - len(payload) % 4, 4):
                    os.close(int.from_bytes(payload[index:index + 4], sys.byteorder))
            self.buffer += data
        line, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(line)

    def close(self):
        self.sock.close()
        self.process.terminate()
        self.process.wait(10)
        os.close(self.lock)
        shutil.rmtree(self.base, ignore_errors=True)


def looks_by_keeper():
    keeper = RawKeeper()
    figures = {}
    try:
        keeper.hello()
        for index, (name, argv) in enumerate(SHAPES.items()):
            if shutil.which(argv[0]) is None:
                continue
            job = f"bench{index}"
            keeper.call({"op": "spawn", "job": job, "argv": argv, "env": dict(os.environ), "cwd": "/tmp",
                         "rows": 40, "cols": 120, "umask": 0o22})
            time.sleep(1.0)
            before = cpu_seconds(keeper.process.pid)
            figures[name] = _timed(lambda: keeper.call({"op": "probe", "job": job}), LOOKS)
            figures[name]["keeper_cpu_us_per_probe"] = round(
                (cpu_seconds(keeper.process.pid) - before) * 1e6 / LOOKS)
            figures[name]["verdict"] = keeper.call({"op": "probe", "job": job})["evidence"]["verdict"]
        figures["floor: the keeper's hello"] = _timed(keeper.hello, LOOKS)
    finally:
        keeper.close()
    return figures


def idle_fleet(term, ramp, window):
    """Daemon and keeper CPU (% of one core) over `window` s, `ramp` s after IDLE_JOBS
    quiet jobs settled, half reading their terminal (`cat`), half asleep; `term`: their
    profile's."""
    daemon = Daemon()
    try:
        commands = [["sh", "-c", "printf 'ready> '; exec cat"], ["sh", "-c", "echo started; exec sleep 100000"]]
        for index in range(IDLE_JOBS):
            daemon.call("dispatch", kind="shell", cwd="/tmp", command=commands[index % 2], env={}, name="",
                        sessionFile="", origin="dispatch", term=term)

        def settled():
            jobs = daemon.call("list")["jobs"]
            return len(jobs) == IDLE_JOBS and all(row["summary"] for row in jobs)
        wait(settled, 300, "every job's first screen")
        time.sleep(ramp)
        keeper = daemon.keeper_pid()
        before = cpu_seconds(daemon.process.pid), cpu_seconds(keeper)
        time.sleep(window)
        after = cpu_seconds(daemon.process.pid), cpu_seconds(keeper)
        states = {}
        for row in daemon.call("list")["jobs"]:
            key = f"{row['state']}/{row['status']}"
            states[key] = states.get(key, 0) + 1
        return {"daemon_cpu_percent": round(100 * (after[0] - before[0]) / window, 2),
                "keeper_cpu_percent": round(100 * (after[1] - before[1]) / window, 2), "states": states,
                "window_s": window}
    finally:
        daemon.close()


def measure():
    return {"here": looks_here(), "keeper": looks_by_keeper(),
            "idle_floor": idle_fleet({"settleMs": 700, "waiting": "ready>", "working": "^started$"}, 10.0, 60.0),
            "idle_plain": idle_fleet(None, RAMP_S, WINDOW_S)}


def report(figures):
    rows = ["| measure | figure | aim |", "|---|---|---|"]
    here, keeper = figures["here"], figures["keeper"]
    for name, value in here.items():
        if isinstance(value, dict):
            said = f" ({value['processes']} processes, {value['verdict']})" if "verdict" in value else ""
            what = name if name.startswith("floor") else f"a look at {name}{said}"
            rows.append(f"| {what}, in the reading process: median / p90 | {value['median_us']} / "
                        f"{value['p90_us']} µs | |")
    for name, value in keeper.items():
        extra = f"; the keeper's CPU {value['keeper_cpu_us_per_probe']} µs a probe" \
            if "keeper_cpu_us_per_probe" in value else ""
        what = name if name.startswith("floor") else f"the keeper's probe of {name}"
        rows.append(f"| {what}: round trip median / p90{extra} | {value['median_us']} / {value['p90_us']} µs | |")
    rows.append(f"| processes on the machine during the looks | {here['processes on the machine']} | |")
    floor, plain = figures["idle_floor"], figures["idle_plain"]
    total = round(plain["daemon_cpu_percent"] + plain["keeper_cpu_percent"], 2)
    base = round(floor["daemon_cpu_percent"] + floor["keeper_cpu_percent"], 2)
    rows += [
        f"| floor: {IDLE_JOBS} quiet jobs read from the screen (a waiting pattern: no look again), daemon + "
        f"keeper CPU over {floor.get('window_s', 60):.0f} s | "
        f"{floor['daemon_cpu_percent']} + {floor['keeper_cpu_percent']} = "
        f"{base} % of a core | |",
        f"| {IDLE_JOBS} quiet plain jobs (half reading, half asleep), looked at again with backoff (at most "
        f"every 60 s), over {plain.get('window_s', 60):.0f} s from {RAMP_S:.0f} s after they settled | "
        f"{plain['daemon_cpu_percent']} + {plain['keeper_cpu_percent']} = "
        f"{total} % of a core | < 2 % |",
        f"| ... what the looks again cost beside the floor | {round(total - base, 2)} % of a core | |",
        f"| ... their rows | {', '.join(f'{count} {key}' for key, count in sorted(plain['states'].items()))} | "
        f"{IDLE_JOBS // 2} blocked/waiting, {IDLE_JOBS // 2} working/busy |",
    ]
    return "\n".join(rows)


if __name__ == "__main__":
    result = measure()
    print(json.dumps(result, indent=2))
    print(report(result))
