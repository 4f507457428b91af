"""`roost list --watch` (issue 18): the list, then again at each change the daemon
pushes (subscribe, no polling)."""

import json
import os
import select
import subprocess
import time

from conftest import PYTHON
from jobkit import agent, dispatch


class Watcher:
    def __init__(self, daemon, *args):
        self.process = subprocess.Popen([PYTHON, "-m", "roost", "list", "--watch", "--json", *args],
                                        env=daemon.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.buffer = b""

    def next_list(self, predicate, timeout=10):
        """The first list printed from now on that `predicate` holds for."""
        deadline = time.monotonic() + timeout
        while True:
            while b"\n" in self.buffer:
                line, self.buffer = self.buffer.split(b"\n", 1)
                jobs = json.loads(line)["jobs"]
                if predicate(jobs):
                    return jobs
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError("timed out waiting for the list")
            ready, _, _ = select.select([self.process.stdout], [], [], left)
            if ready:
                chunk = os.read(self.process.stdout.fileno(), 65536)
                if not chunk:
                    raise AssertionError(f"roost list --watch ended: {self.process.stderr.read()!r}")
                self.buffer += chunk

    def close(self):
        self.process.kill()
        self.process.wait(10)
        self.process.stdout.close()
        self.process.stderr.close()


def test_list_watch_prints_each_change(daemon):
    first = dispatch(daemon, agent("works_a_while.py", 60, 0.2), name="first")
    watcher = Watcher(daemon)
    try:
        jobs = watcher.next_list(lambda jobs: True)
        assert [job["id"] for job in jobs] == [first]
        second = dispatch(daemon, agent("works_a_while.py", 60, 0.2), name="second")
        jobs = watcher.next_list(lambda jobs: len(jobs) == 2)
        assert [job["name"] for job in jobs] == ["first", "second"]
        daemon.call("pin", id=second, pinned=True)
        watcher.next_list(lambda jobs: [job["name"] for job in jobs] == ["second", "first"])
        daemon.call("stop", id=first)
        watcher.next_list(lambda jobs: any(job["id"] == first and job["state"] == "stopped" for job in jobs))
        daemon.call("rm", id=first)
        jobs = watcher.next_list(lambda jobs: all(job["id"] != first for job in jobs))
        assert [job["id"] for job in jobs] == [second]
    finally:
        watcher.close()


def test_list_watch_keeps_to_its_directory(daemon, tmp_path):
    inside = str(tmp_path)
    dispatch(daemon, agent("works_a_while.py", 60, 0.2), name="elsewhere")
    watcher = Watcher(daemon, f"--cwd={inside}")
    try:
        assert watcher.next_list(lambda jobs: True) == []
        dispatch(daemon, agent("works_a_while.py", 60, 0.2), cwd=inside, name="here")
        jobs = watcher.next_list(lambda jobs: len(jobs) > 0)
        assert [job["name"] for job in jobs] == ["here"]
    finally:
        watcher.close()
