"""The state store: atomic, durable writes; damaged files set aside, never replaced."""

import os
import signal
import subprocess
import sys
import textwrap

from conftest import ROOT, wait_for
from roost import store

WRITER = textwrap.dedent("""
    import os, sys
    sys.path.insert(0, sys.argv[2])
    from roost.daemon import patching
    patching.patch()
    import gevent
    from roost import blocking, store
    blocking.use_threadpool()
    directory = sys.argv[1]
    def burst(name):
        n = 0
        while True:
            n += 1
            store.write_json(os.path.join(directory, name + ".json"),
                             {"version": 1, "n": n, "pad": "x" * (n % 5000), "name": name})
            if n == 20:
                open(os.path.join(directory, name + ".started"), "w").close()
    gevent.joinall([gevent.spawn(burst, f"file{i}") for i in range(8)])
""")


def test_kill_9_during_a_burst_of_writes_leaves_every_file_loadable(tmp_path):
    for round_ in range(3):
        directory = tmp_path / f"round{round_}"
        directory.mkdir()
        proc = subprocess.Popen([sys.executable, "-c", WRITER, str(directory), ROOT])
        wait_for(lambda: len(list(directory.glob("*.started"))) == 8, timeout=20, what="all writers")
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        before = list(store.corrupt_files)
        for i in range(8):
            value = store.read_json(str(directory / f"file{i}.json"))
            assert value is not None and value["name"] == f"file{i}" and value["n"] >= 20
            assert len(value["pad"]) == value["n"] % 5000
        assert store.corrupt_files == before
        # Temp files may be left by the kill; they never carry a state file's name.
        assert all(name.endswith((".json", ".started", ".tmp")) for name in os.listdir(directory))


def test_a_damaged_file_is_set_aside_not_replaced(tmp_path):
    path = tmp_path / "state.json"
    path.write_bytes(b'{"version": 1, "jobs": [tru')
    assert store.read_json(str(path), default={"empty": True}) == {"empty": True}
    assert not path.exists()
    [aside] = [p for p in tmp_path.iterdir() if ".corrupt-" in p.name]
    assert aside.read_bytes() == b'{"version": 1, "jobs": [tru'
    assert str(aside) in store.corrupt_files


def test_writes_are_private_and_keep_unknown_fields(tmp_path):
    path = str(tmp_path / "state.json")
    store.write_json(path, {"version": 1, "mine": 1, "future": {"x": [1, 2]}})
    assert os.stat(path).st_mode & 0o777 == 0o600
    value = store.read_json(path)
    value["mine"] = 2
    store.write_json(path, value)
    assert store.read_json(path) == {"version": 1, "mine": 2, "future": {"x": [1, 2]}}
    assert os.listdir(tmp_path) == ["state.json"]


def test_kill_9_of_the_daemon_during_a_burst_of_writes_leaves_every_file_loadable(daemon):
    import json
    import threading

    from roost.client.connection import Client

    ids = [daemon.call("dispatch", kind="shell", cwd="/", sessionFile="", env={}, name=f"w{n}",
                       origin="dispatch", command=["sleep", "60"])["id"] for n in range(6)]
    counts = [0] * len(ids)
    stop = threading.Event()

    def burst(index):
        try:
            with Client.connect(daemon.socket, timeout=10) as client:
                while not stop.is_set():
                    counts[index] += 1
                    client.call("rename", {"id": ids[index], "name": f"w{index}-{counts[index]}"})
                    client.call("pin", {"id": ids[index], "pinned": counts[index] % 2 == 0})
        except Exception:
            pass   # the daemon died under it: that is the point

    threads = [threading.Thread(target=burst, args=(n,)) for n in range(len(ids))]
    for thread in threads:
        thread.start()
    wait_for(lambda: min(counts) >= 20, what="a burst of writes on every job")
    daemon.kill9()
    stop.set()
    for thread in threads:
        thread.join(10)
    for job_id in ids:
        with open(os.path.join(daemon.home, "jobs", job_id, "job.json")) as handle:
            assert json.load(handle)["id"] == job_id
    daemon.start()
    status = daemon.call("status")
    assert status["corruptFiles"] == [] and status["totalJobs"] == len(ids)
    rows = {row["id"]: row for row in daemon.call("list", all=True)["jobs"]}
    assert all(rows[job_id]["name"].startswith(f"w{n}-") for n, job_id in enumerate(ids))
