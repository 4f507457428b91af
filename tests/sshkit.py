"""A real sshd for the tests of other machines (`roost --host`, issue 18): listening on
127.0.0.1 only, on a free port, with a throwaway host key and user key in a temp dir.
The "other machine" is this one reached over ssh: its `roost` is this checkout's, run
by a wrapper script that gives it a home of the test's (its daemon is the remote one)."""

import os
import shlex
import shutil
import signal
import socket
import subprocess
import tempfile

import pytest

from conftest import PYTHON, ROOT, wait_for

SSHD = shutil.which("sshd") or "/usr/sbin/sshd"
SSH = shutil.which("ssh")
KEYGEN = shutil.which("ssh-keygen")
HOST = "box"        # the name the tests' ssh config gives 127.0.0.1


def why_not():
    """Why sshd cannot be had here, or None."""
    if not os.path.exists(SSHD) or not SSH or not KEYGEN:
        return "openssh-server and openssh-client are not installed (scripts/setup installs them as root)"
    if os.getuid() != 0:
        return "sshd for the tests runs as root (it logs the test's user in with a key of its own)"
    return None


def _free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Sshd:
    def __init__(self, directory):
        self.directory = directory
        self.process = None
        self.port = None
        self.ssh_config = os.path.join(directory, "ssh_config")

    def _path(self, name):
        return os.path.join(self.directory, name)

    def start(self):
        for name in ("host_key", "user_key"):
            subprocess.run([KEYGEN, "-q", "-t", "ed25519", "-N", "", "-f", self._path(name)], check=True)
        shutil.copy(self._path("user_key.pub"), self._path("authorized_keys"))
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)       # sshd's privilege separation
        self.port = _free_port()
        with open(self._path("sshd_config"), "w") as handle:
            handle.write(f"Port {self.port}\nListenAddress 127.0.0.1\nHostKey {self._path('host_key')}\n"
                         f"AuthorizedKeysFile {self._path('authorized_keys')}\nPidFile {self._path('sshd.pid')}\n"
                         "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\n"
                         "PermitRootLogin prohibit-password\nStrictModes no\nPrintMotd no\n"
                         "AllowTcpForwarding no\nX11Forwarding no\nLogLevel ERROR\n")
        with open(self.ssh_config, "w") as handle:
            handle.write(f"Host {HOST}\n  HostName 127.0.0.1\n  Port {self.port}\n  User root\n"
                         f"  IdentityFile {self._path('user_key')}\n  IdentitiesOnly yes\n  BatchMode yes\n"
                         f"  StrictHostKeyChecking no\n  UserKnownHostsFile /dev/null\n  LogLevel ERROR\n")
        return self.listen()

    def listen(self):
        """sshd on its port (again, after `stop`: the sessions it serves are not its own)."""
        self.log = open(self._path("sshd.log"), "ab")
        self.process = subprocess.Popen([SSHD, "-D", "-e", "-f", self._path("sshd_config")],
                                        stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        wait_for(self._answers, timeout=15, what="sshd to answer")
        return self

    def _answers(self):
        if self.process.poll() is not None:
            with open(self._path("sshd.log"), "rb") as handle:
                raise AssertionError(f"sshd exited with {self.process.returncode}: {handle.read()!r}")
        return subprocess.run(self.ssh(["true"]), capture_output=True, timeout=20).returncode == 0

    def ssh(self, command):
        return [SSH, "-F", self.ssh_config, HOST, shlex.join(command)]

    def stop(self):
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(10)

    def remote_roost(self, remote_home):
        """A `roost` for the other side: this checkout's, on `remote_home`."""
        path = os.path.join(os.path.dirname(remote_home), "remote-roost")
        with open(path, "w") as handle:
            handle.write("#!/bin/sh\n"
                         f"ROOST_HOME={shlex.quote(remote_home)} PYTHONPATH={shlex.quote(ROOT)} "
                         f"exec {shlex.quote(PYTHON)} -m roost \"$@\"\n")
        os.chmod(path, 0o755)
        return path

    def setting(self, remote_home):
        """roost.json's `ssh` for reaching `remote_home`'s daemon on HOST."""
        return {"command": [SSH, "-F", self.ssh_config], "roost": [self.remote_roost(remote_home)]}


@pytest.fixture(scope="module")
def sshd():
    reason = why_not()
    if reason:
        pytest.skip(reason)
    directory = tempfile.mkdtemp(prefix="rs-", dir="/tmp")
    server = Sshd(directory)
    try:
        server.start()
    except (AssertionError, subprocess.SubprocessError, OSError) as error:
        server.stop()
        shutil.rmtree(directory, ignore_errors=True)
        pytest.skip(f"sshd could not be started here: {error}")
    yield server
    server.stop()
    shutil.rmtree(directory, ignore_errors=True)
