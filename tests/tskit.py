"""The TypeScript client (clients/typescript) compiled by the package's pinned tsc, once a
session, and run by node."""

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess

import pytest

from conftest import ROOT
from protokit import ProtoJob


PACKAGE = os.path.join(ROOT, "clients", "typescript")


NODE = shutil.which("node")


CLIENT_JS = os.path.join(PACKAGE, "dist", "src", "roost-agent.js")


TSC = os.path.join(PACKAGE, "node_modules", ".bin", "tsc")
# Compiled output kept across runs and checkouts, by the hash of what went into it (tsc's
# version, the config, every source): a clean clone (CI) of sources compiled before on the
# machine compiles nothing. ROOST_TEST_CACHE moves it.
CACHE = os.path.join(os.environ.get("ROOST_TEST_CACHE")
                     or os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "roost-tests"),
                     "tsc")


def _inputs_hash(paths, config):
    """What a compile depends on: tsc's own version, its config, every source it reads."""
    digest = hashlib.sha256(json.dumps(config, sort_keys=True).encode())
    with open(os.path.join(PACKAGE, "node_modules", "typescript", "package.json"), "rb") as handle:
        digest.update(handle.read())
    for path in sorted(paths):
        digest.update(path.encode() + b"\0")
        with open(path, "rb") as handle:
            digest.update(handle.read())
    return digest.hexdigest()[:24]


def _sources(*directories):
    return [os.path.join(directory, name) for top in directories for directory, _, names in os.walk(top)
            for name in names if name.endswith(".ts")]


@contextlib.contextmanager
def _lock():
    """One compile at a time across the test processes (pytest-xdist's workers)."""
    os.makedirs(CACHE, exist_ok=True)
    with open(os.path.join(CACHE, ".lock"), "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def once(config, inputs, build):
    """`build(out)` into a directory of the cache named by the hash of `config` and
    `inputs`, unless a run before did it; the directory."""
    if not os.path.exists(TSC):
        pytest.fail(f"{TSC} is missing: run scripts/setup (it installs the TypeScript client's dev dependencies)")
    out = os.path.join(CACHE, _inputs_hash(inputs, config))
    with _lock():
        if not os.path.exists(os.path.join(out, ".done")):
            shutil.rmtree(out, ignore_errors=True)
            os.makedirs(out)
            build(out)
            open(os.path.join(out, ".done"), "w").close()
    return out


@pytest.fixture(scope="session")
def compiled():
    """The client and its test agent compiled into the package's dist/ (tsc also checks
    the types); a compile of the same sources before is used again."""
    def build(out):
        built = subprocess.run([TSC, "-p", PACKAGE, "--outDir", os.path.join(out, "dist")],
                               capture_output=True, text=True, timeout=180)
        assert built.returncode == 0, f"tsc failed:\n{built.stdout}{built.stderr}"
    inputs = _sources(os.path.join(PACKAGE, "src"), os.path.join(PACKAGE, "test")) + \
        [os.path.join(PACKAGE, "tsconfig.json"), os.path.join(PACKAGE, "package.json")]
    out = once({"project": "package"}, inputs, build)
    with _lock():
        dist = os.path.join(PACKAGE, "dist")
        if not os.path.exists(os.path.join(dist, ".from")) or open(os.path.join(dist, ".from")).read() != out:
            shutil.rmtree(dist, ignore_errors=True)
            shutil.copytree(os.path.join(out, "dist"), dist)
            with open(os.path.join(dist, ".from"), "w") as handle:
                handle.write(out)
    return RECORDER


RECORDER = os.path.join(PACKAGE, "dist", "test", "recorder.js")


def command(*args):
    # The agent's own stdout and stderr go to stdio.txt: the client must write nothing.
    return ["sh", "-c", 'exec "$0" "$@" >>"$ROOST_JOB_DIR/stdio.txt" 2>&1', NODE, RECORDER, *args]


PROFILES = {
    "ts": {"command": command(), "task": "type", "protocol": True},
    "ts-crasher": {"command": command("--crash-on", "boom"), "task": "type", "protocol": True},
    "ts-messages": {"command": command("--messages"), "task": "type", "protocol": True},
    "ts-no-close": {"command": command("--no-close"), "protocol": True},
}


def start(daemon, profile="ts", task=None, env=None):
    with open(os.path.join(daemon.home, "roost.json"), "w", encoding="utf-8") as handle:
        json.dump({"agentProfiles": PROFILES}, handle)
    launch = {"kind": "shell", "cwd": os.path.dirname(daemon.home), "sessionFile": "", "command": [],
              "env": {"PROTO_LOG": os.path.join(os.path.dirname(daemon.home), "client.log"), **(env or {})},
              "name": profile, "origin": "dispatch", "profile": profile}
    if task is not None:
        launch["task"] = task
    return TsJob(daemon, daemon.call("dispatch", **launch)["id"])


class TsJob(ProtoJob):
    def stdio(self):
        try:
            return super().stdio()
        except FileNotFoundError:
            return ""
