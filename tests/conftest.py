"""Fixtures for tests against a real daemon on a temp socket."""

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from roost.client.connection import Client, Lost  # noqa: E402

PYTHON = sys.executable
AGENTS = os.path.join(ROOT, "tests", "agents")

# Every daemon a test starts checks each answer against its op's row (roost.ops: a field
# or a code the row does not declare is answered `internal` and logged with a traceback).
os.environ.setdefault("ROOST_CHECK_CONTRACTS", "1")


def wait_for(predicate, timeout=10.0, interval=0.01, what="the condition"):
    """Poll `predicate` until it returns a true value; fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


def short_tempdir():
    # Unix socket paths are limited to ~107 bytes: keep homes short.
    return tempfile.mkdtemp(prefix="rt-", dir="/tmp")


class DaemonProcess:
    """A real `python -m roost daemon --foreground` on a home of its own. A subclass may
    set `code`: the daemon is then `python -c code` (one that patches a part first)."""

    code = None

    def __init__(self, home, extra_env=None):
        self.home = home
        self.env = dict(os.environ)
        self.env.pop("ROOST_SOCKET", None)
        # pytest-xdist's workers set these for their own report: a hub or a CLI started with
        # this environment would take them for its terminal's size.
        self.env.pop("COLUMNS", None)
        self.env.pop("LINES", None)
        self.env.update({"ROOST_HOME": home, "PYTHONPATH": ROOT, "PYTHONUNBUFFERED": "1"})
        self.env.update(extra_env or {})
        self.socket = os.path.join(home, "roost.sock")
        self.process = None

    def start(self, wait=True):
        self.log = open(os.path.join(os.path.dirname(self.home), f"daemon-{time.monotonic_ns()}.err"), "wb")
        argv = [PYTHON, "-c", self.code] if self.code else [PYTHON, "-m", "roost", "daemon", "--foreground"]
        self.process = subprocess.Popen(argv, env=self.env, stdout=self.log, stderr=subprocess.STDOUT,
                                        start_new_session=True)
        if wait:
            wait_for(self.answers, timeout=15, what="the daemon to answer")
        return self

    def answers(self):
        if self.process is not None and self.process.poll() is not None:
            raise AssertionError(f"the daemon exited with {self.process.returncode}: {self.stderr_text()}")
        try:
            with Client.connect(self.socket, timeout=2) as client:
                return client.call("ping")
        except OSError:
            return None

    def stderr_text(self):
        self.log.flush()
        with open(self.log.name, "rb") as handle:
            return handle.read().decode("utf-8", "replace")

    def client(self, timeout=30):
        return Client.connect(self.socket, timeout=timeout)

    def call(self, op, **args):
        try:
            with self.client() as client:
                return client.call(op, args)
        except (OSError, Lost) as error:
            error.add_note(self.describe())
            raise

    def describe(self):
        """The daemon's state, for a failure that may be its death."""
        code = self.process.poll() if self.process is not None else None
        state = "running" if code is None else f"exited with {code}"
        log_path = os.path.join(self.home, "daemon.log")
        tail = ""
        if os.path.exists(log_path):
            with open(log_path, encoding="utf-8", errors="replace") as handle:
                tail = handle.read()[-3000:]
        return f"the daemon is {state}; its stderr:\n{self.stderr_text()[-2000:]}\nits log:\n{tail}"

    def kill9(self):
        self.process.kill()
        self.process.wait(10)

    def stop(self, timeout=15):
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(5)

    def restart(self):
        self.stop()
        return self.start()

    def cli(self, *argv, input=None, timeout=30, env=None):
        """Run `python -m roost ARGV` against this daemon's home."""
        return subprocess.run([PYTHON, "-m", "roost", *argv], env={**self.env, **(env or {})},
                              input=input, capture_output=True, timeout=timeout)


def _kill_leftovers(home):
    """Stop anything a test left behind that carries this home (keeper, jobs)."""
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as handle:
                environ = handle.read()
        except OSError:
            continue
        marks = (f"ROOST_HOME={home}\0", f"ROOST_HOME={home}/", f"ROOST_JOB_DIR={home}/")
        if any(mark.encode() in environ for mark in marks):
            try:
                os.kill(int(pid), signal.SIGKILL)
            except OSError:
                pass


@pytest.fixture
def home():
    base = short_tempdir()
    path = os.path.join(base, "h")
    yield path
    _kill_leftovers(path)
    shutil.rmtree(base, ignore_errors=True)


def tracebacks_in_log(home):
    """What the daemon logged with a traceback: an op that failed inside it, or a greenlet
    that died. Any of it fails the test that caused it (gevent's "errors are fatal")."""
    path = os.path.join(home, "daemon.log")
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            text = handle.read()
    except FileNotFoundError:
        return ""
    return text if "Traceback" in text else ""


def serving(process):
    """A daemon fixture's life: `process` started, handed to the test, stopped; a
    traceback in its log fails the test."""
    process.start()
    yield process
    process.stop()
    problems = tracebacks_in_log(process.home)
    assert not problems, "the daemon logged a traceback:\n" + problems[-4000:]


@pytest.fixture
def daemon(home):
    yield from serving(DaemonProcess(home))
