"""Clients check whom they talk to (issue 16 item 8): the CLI, roost_agent.py, the
TypeScript client and `roost mcp` refuse a socket that is not the user's own roost's,
before they send a byte: one in a directory of another user's, and (for the clients that
can read SO_PEERCRED) one in the user's own directory served by another user.

The other user is `nobody`: a tiny server started as root that takes nobody's uid (before
bind, or between bind and listen) and counts the bytes each connection sent it."""

import contextlib
import json
import os
import pwd
import subprocess
import sys

import pytest

from conftest import PYTHON, ROOT, short_tempdir, wait_for
from tskit import CLIENT_JS, NODE, compiled  # noqa: F401 (a fixture)

NOBODY = pwd.getpwnam("nobody").pw_uid

pytestmark = pytest.mark.skipif(os.getuid() != 0, reason="needs root, to run a server as another user")

# argv: socket path, "before-bind" or "before-listen". Prints "ready", then the byte count
# of each connection once it ends.
SERVER = r"""
import os, socket, sys
path, when = sys.argv[1], sys.argv[2]
uid = int(sys.argv[3])
if when == "before-bind":
    os.setgid(uid); os.setuid(uid)
sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
sock.bind(path)
os.chmod(path, 0o777)
if when == "before-listen":
    os.setgid(uid); os.setuid(uid)
sock.listen(8)
print("ready", flush=True)
while True:
    conn, _ = sock.accept()
    conn.settimeout(3)
    got = 0
    try:
        while True:
            chunk = conn.recv(65536)
            if not chunk:
                break
            got += len(chunk)
    except OSError:
        pass
    conn.close()
    print(got, flush=True)
"""


class ForeignServer:
    def __init__(self, path, when):
        self.path = path
        self.process = subprocess.Popen([PYTHON, "-c", SERVER, path, when, str(NOBODY)],
                                        stdout=subprocess.PIPE, text=True)
        assert self.process.stdout.readline().strip() == "ready"

    def received(self):
        """The byte counts of the connections it had (it is stopped first)."""
        self.process.terminate()
        out, _ = self.process.communicate(timeout=10)
        return [int(line) for line in out.split()]


@contextlib.contextmanager
def foreign_server(kind):
    """their-directory: nobody's directory and socket; their-listener: the user's own
    directory and socket file, nobody's listening process; their-socket: the user's own
    directory, nobody's socket file."""
    base = short_tempdir()
    os.chmod(base, 0o711)       # nobody may pass through to its own directory
    directory = os.path.join(base, "d")
    os.mkdir(directory, 0o755 if kind == "their-directory" else 0o700)
    if kind == "their-directory":
        os.chown(directory, NOBODY, NOBODY)
    server = ForeignServer(os.path.join(directory, "roost.sock"),
                           "before-bind" if kind == "their-directory" else "before-listen")
    if kind == "their-socket":
        os.chown(server.path, NOBODY, NOBODY)
    server.kind = kind
    try:
        yield server
    finally:
        if server.process.poll() is None:
            server.process.kill()
            server.process.wait()
        subprocess.run(["rm", "-rf", base])


@pytest.fixture(params=["their-directory", "their-listener"])
def foreign(request):
    with foreign_server(request.param) as server:
        yield server


def client_env(socket_path):
    env = {key: value for key, value in os.environ.items() if not key.startswith(("ROOST_", "PI_"))}
    env.update({"ROOST_SOCKET": socket_path, "PYTHONPATH": ROOT, "ROOST_HOME": os.path.dirname(socket_path)})
    return env


def refused_text(kind):
    return "belongs to uid" if kind == "their-directory" else "is served by uid"


def test_the_cli_refuses_someone_elses_socket(foreign):
    done = subprocess.run([PYTHON, "-m", "roost", "ping"], env=client_env(foreign.path), capture_output=True,
                          text=True, timeout=30)
    assert done.returncode == 3, done
    assert "refusing to talk to" in done.stderr and refused_text(foreign.kind) in done.stderr, done.stderr
    assert not any(foreign.received())


def test_roost_agent_py_refuses_someone_elses_socket(foreign):
    sys.path.insert(0, ROOT)
    import roost_agent

    agent = roost_agent.RoostAgent("job", "token", foreign.path, name="probe")
    agent.report("working")
    wait_for(lambda: agent.refused, what="the agent to give up")
    assert agent.refused.code == "untrusted" and refused_text(foreign.kind) in agent.refused.text
    agent.close()
    with pytest.raises(roost_agent.RoostError) as refused:
        roost_agent.RoostPeer.register("probe", socket_path=foreign.path)
    assert refused.value.code == "untrusted"
    assert not any(foreign.received())


def test_roost_mcp_refuses_someone_elses_socket(foreign):
    from mcpkit import text_of, with_client

    env = dict(client_env(foreign.path), ROOST_JOB_ID="job", ROOST_JOB_TOKEN="token")

    async def steps(client):
        return await client.call_tool("roost_peers", {})

    result = with_client(env, steps)
    assert result.is_error
    assert "refusing to talk to" in text_of(result) and refused_text(foreign.kind) in text_of(result)
    assert not any(foreign.received())


AGENT_JS = r"""
const { RoostAgent } = await import(process.argv[1]);
const agent = new RoostAgent({ jobId: "job", token: "token", socketPath: process.argv[2], name: "probe",
                               onRefused: (error) => { console.log(JSON.stringify({ code: error.code, text: error.text })); } });
agent.report({ state: "working" });
setTimeout(() => { if (!agent.refused) console.log(JSON.stringify({ code: null })); agent.close(); }, 3000);
"""


@pytest.mark.parametrize("kind", ["their-directory", "their-socket"])
def test_the_typescript_client_refuses_someone_elses_socket(request, kind):
    """It cannot read SO_PEERCRED: it checks the directory's owner and mode and the
    socket file's owner."""
    if NODE is None:
        pytest.skip("node is not installed")
    request.getfixturevalue("compiled")
    with foreign_server(kind) as server:
        done = subprocess.run([NODE, "--input-type=module", "-e", AGENT_JS, CLIENT_JS, server.path], capture_output=True, text=True,
                              timeout=30)
        assert done.returncode == 0, done.stderr
        said = json.loads(done.stdout.strip().splitlines()[0])
        assert said["code"] == "untrusted", said
        assert "belongs to uid" in said["text"]
        assert not any(server.received())


def test_the_users_own_daemon_is_still_reached(daemon):
    assert daemon.call("ping")["pid"]
    done = daemon.cli("ping")
    assert done.returncode == 0, done.stderr
