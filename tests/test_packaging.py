"""What the frozen build relies on, checked from source: the one monkey patch, the
environment handed to programs roost starts, the way roost runs itself, the bundled
agent file. tests/test_frozen.py runs the same paths in the real binary."""

import os
import subprocess
import sys

import pytest

from conftest import ROOT
from roost.bundle import files as bundle
from roost.bundle import userenv

PYTHON = sys.executable


def run_python(code, timeout=60):
    env = {**os.environ, "PYTHONPATH": ROOT}
    return subprocess.run([PYTHON, "-c", code], env=env, capture_output=True, text=True, timeout=timeout)


def test_patch_is_idempotent_and_leaves_os_and_signal_alone():
    done = run_python(
        "import roost.daemon.patching as patching\n"
        "assert not patching.is_patched()\n"
        "patching.patch(); patching.patch()\n"
        "from gevent import monkey\n"
        "import socket, gevent.socket\n"
        "assert socket.socket is gevent.socket.socket\n"
        "assert monkey.is_module_patched('socket') and monkey.is_module_patched('subprocess')\n"
        "assert not monkey.is_module_patched('os') and not monkey.is_module_patched('signal')\n"
        "assert patching.is_patched()\n"
        "print('ok')\n")
    assert done.returncode == 0 and done.stdout == "ok\n", done.stderr


def test_pexpect_spawns_under_the_patching():
    """STYLE traps: with `os` patched, gevent defers os.close and pexpect.spawn hangs."""
    done = run_python(
        "import roost.daemon.patching\n"
        "roost.daemon.patching.patch()\n"
        "import pexpect\n"
        "child = pexpect.spawn('echo', ['spawned'], timeout=10)\n"
        "child.expect('spawned')\n"
        "child.expect(pexpect.EOF)\n"
        "child.close()\n"
        "print(child.exitstatus)\n", timeout=20)
    assert done.returncode == 0 and done.stdout == "0\n", done.stderr


def test_the_cli_path_does_not_import_gevent():
    done = run_python(
        "import sys, runpy\n"
        "sys.argv = ['roost', '--version']\n"
        "try:\n"
        "    runpy.run_module('roost', run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass\n"
        "assert 'gevent' not in sys.modules, 'the CLI imported gevent'\n"
        "assert 'roost.daemon.patching' not in sys.modules\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("roost ")


def test_from_source_the_environment_is_passed_unchanged():
    env = {"LD_LIBRARY_PATH": "/a", "LD_LIBRARY_PATH_ORIG": "/b", "_PYI_ARCHIVE_FILE": "x"}
    assert userenv.user_environ(env) == env and userenv.user_environ(env) is not env
    assert userenv.detached_environ(env) == env
    assert userenv.user_environ() == dict(os.environ)


def test_from_source_roost_runs_as_a_module():
    assert userenv.roost_command() == [sys.executable, "-m", "roost"]
    done = subprocess.run(userenv.roost_command() + ["--version"], env={**os.environ, "PYTHONPATH": ROOT},
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.startswith("roost ")


@pytest.fixture
def as_frozen(monkeypatch):
    """The interpreter's frozen flag, as PyInstaller's bootloader sets it."""
    monkeypatch.setattr(sys, "frozen", True, raising=False)


@pytest.mark.parametrize("bootloader_env, user_value", [
    ({"LD_LIBRARY_PATH": "/bundle/_internal:/x/y", "LD_LIBRARY_PATH_ORIG": "/x/y"}, "/x/y"),
    ({"LD_LIBRARY_PATH": "/bundle/_internal"}, None),
    ({"LD_LIBRARY_PATH": "/bundle/_internal:", "LD_LIBRARY_PATH_ORIG": ""}, ""),
], ids=["user-had-one", "user-had-none", "user-had-empty"])
def test_frozen_the_users_library_path_comes_back(as_frozen, bootloader_env, user_value):
    env = {"HOME": "/home/u", **bootloader_env}
    restored = userenv.user_environ(env)
    assert restored.get("LD_LIBRARY_PATH") == user_value
    assert "LD_LIBRARY_PATH_ORIG" not in restored
    assert restored["HOME"] == "/home/u"


def test_frozen_the_bootloaders_variables_are_dropped(as_frozen):
    env = {"PATH": "/usr/bin", "_PYI_ARCHIVE_FILE": "/c/roost", "_PYI_PARENT_PROCESS_LEVEL": "1",
           "_PYI_LINUX_PROCESS_NAME": "roost", "_MEIPASS2": "/tmp/_MEI1", "PYINSTALLER_RESET_ENVIRONMENT": "1",
           "PYINSTALLER_CONFIG_DIR": "/home/u/.pyi"}
    # A user's own PYINSTALLER_CONFIG_DIR (a job that builds with PyInstaller) is kept.
    assert userenv.user_environ(env) == {"PATH": "/usr/bin", "PYINSTALLER_CONFIG_DIR": "/home/u/.pyi"}


def test_frozen_roost_restarts_itself_afresh(as_frozen):
    env = {"LD_LIBRARY_PATH": "/bundle/_internal", "_PYI_PARENT_PROCESS_LEVEL": "1"}
    assert userenv.detached_environ(env) == {"PYINSTALLER_RESET_ENVIRONMENT": "1"}
    assert userenv.roost_command() == [sys.executable]


def test_the_agent_file_is_found_in_a_checkout():
    assert not bundle.is_frozen()
    assert bundle.agent_file_path() == os.path.join(ROOT, "roost_agent.py")
    assert os.path.isfile(bundle.agent_file_path())
