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
    from roost import patching
    patching.patch()
    import gevent
    from roost import store
    store.use_threadpool()
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
