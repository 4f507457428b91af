"""Other machines (issue 18): what `roost --host` costs over ssh, against floors measured
in the same run. The other machine is this one, reached over a real sshd on 127.0.0.1
(tests/sshkit.py), so the figures are ssh's and the proxy's, not a network's.

Measured: a whole command (`roost list`, a new process each time) here and with
`--host`, against `ssh HOST true` (ssh's own start and handshake, the floor of any
remote command); and the round trip of a ping on one open connection, over the local
socket and through `ssh HOST roost proxy` (what the hub and attach pay per message).

    .venv/bin/python bench/hosts.py          # prints the figures
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))

import sshkit  # noqa: E402  (the tests' sshd, its throwaway keys)
from benchkit import percentile, wait  # noqa: E402
from roost.client import hosts  # noqa: E402
from roost.client.connection import Client  # noqa: E402

COMMANDS = 10
PINGS = 500


def _wall_ms(argv, env):
    times = []
    for _ in range(COMMANDS):
        start = time.perf_counter()
        subprocess.run(argv, env=env, check=True, capture_output=True, timeout=60)
        times.append((time.perf_counter() - start) * 1000)
    return {"p50_ms": percentile(times, 0.5), "max_ms": max(times)}


def _pings(client):
    client.call("ping")
    times = []
    for _ in range(PINGS):
        start = time.perf_counter_ns()
        client.call("ping")
        times.append((time.perf_counter_ns() - start) / 1000)
    client.close()
    return {"p50_us": percentile(times, 0.5), "p99_us": percentile(times, 0.99)}


def _shared_connection(server, home, env, roost):
    """`roost --host` when the user's ssh config shares one connection (ControlMaster):
    each command then skips ssh's handshake."""
    shared = os.path.join(os.path.dirname(home), "ssh_config_shared")
    with open(server.ssh_config) as handle:
        config = handle.read()
    with open(shared, "w") as handle:
        handle.write(config + f"  ControlMaster auto\n  ControlPath {os.path.dirname(home)}/cm-%C\n"
                              "  ControlPersist 60\n")
    setting = server.setting(home)
    setting["command"] = [setting["command"][0], "-F", shared]
    with open(os.path.join(home, "roost.json"), "w") as handle:
        json.dump({"ssh": setting}, handle)
    try:
        subprocess.run(roost + ["--host", sshkit.HOST, "ping"], env=env, check=True, capture_output=True)
        return _wall_ms(roost + ["--host", sshkit.HOST, "list"], env)
    finally:
        subprocess.run(setting["command"] + ["-O", "exit", sshkit.HOST], capture_output=True, timeout=20)
        with open(os.path.join(home, "roost.json"), "w") as handle:
            json.dump({"ssh": server.setting(home)}, handle)


def measure():
    reason = sshkit.why_not()
    if reason:
        raise SystemExit(f"bench hosts: {reason}")
    base = tempfile.mkdtemp(prefix="rb-", dir="/tmp")
    home = os.path.join(base, "h")
    os.makedirs(home, mode=0o700)
    server = sshkit.Sshd(base)
    env = {**os.environ, "ROOST_HOME": home, "PYTHONPATH": ROOT}
    env.pop("ROOST_SOCKET", None)
    daemon = subprocess.Popen([sys.executable, "-m", "roost", "daemon", "--foreground"], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        server.start()
        with open(os.path.join(home, "roost.json"), "w") as handle:
            json.dump({"ssh": server.setting(home)}, handle)    # the "other machine" is this home
        socket_path = os.path.join(home, "roost.sock")
        wait(lambda: os.path.exists(socket_path), 15, "the daemon's socket")
        roost = [sys.executable, "-m", "roost"]
        figures = {
            "ssh_true": _wall_ms(server.ssh(["true"]), env),
            "list_here": _wall_ms(roost + ["list"], env),
            "list_host": _wall_ms(roost + ["--host", sshkit.HOST, "list"], env),
            "list_host_shared": _shared_connection(server, home, env, roost),
            "ping_here": _pings(Client.connect(socket_path, timeout=10)),
            "ping_host": _pings(Client.over_command(hosts.proxy_argv(sshkit.HOST, hosts.settings(env)), 10)),
        }
    finally:
        server.stop()
        daemon.terminate()
        daemon.wait(15)
        from conftest import _kill_leftovers

        _kill_leftovers(home)         # the keeper this daemon started, by its pid
        shutil.rmtree(base, ignore_errors=True)
    return figures


def report(figures):
    lines = ["| a whole command (a new process each) | median (ms) | slowest (ms) |", "|---|---:|---:|"]
    for key, what in (("ssh_true", "`ssh HOST true` (the floor: ssh's start and handshake)"),
                      ("list_here", "`roost list` here"), ("list_host", "`roost --host HOST list`"),
                      ("list_host_shared", "`roost --host HOST list`, ssh sharing one connection (ControlMaster)")):
        lines.append(f"| {what} | {figures[key]['p50_ms']:.0f} | {figures[key]['max_ms']:.0f} |")
    lines += ["", "| a ping on one open connection | median (µs) | p99 (µs) |", "|---|---:|---:|"]
    for key, what in (("ping_here", "over this machine's socket"),
                      ("ping_host", "through `ssh HOST roost proxy` (127.0.0.1)")):
        lines.append(f"| {what} | {figures[key]['p50_us']:.0f} | {figures[key]['p99_us']:.0f} |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(report(measure()))
