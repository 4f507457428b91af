"""The keeper on its own (roost/keeper.py): a real `roost keeper` process driven over its
socket with a blocking client, the way the daemon drives it (fds by SCM_RIGHTS)."""

import json
import os
import shutil
import signal
import socket
import subprocess
import time

import pytest

from conftest import AGENTS, PYTHON, ROOT, wait_for
from keeperkit import KeeperConnection, as_the_daemon
from roost.keeper import wire as keeper_wire


SECRET = "5ec12e7" * 8     # what these tests' keeper is started with, as a daemon would


def read_until(fd, needle, timeout=10):
    """Everything the pty gives until `needle` shows (or EOF)."""
    out = b""
    deadline = time.monotonic() + timeout
    os.set_blocking(fd, False)
    while needle not in out:
        if time.monotonic() > deadline:
            raise AssertionError(f"no {needle!r} in {out!r}")
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            time.sleep(0.005)
            continue
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    return out


def start_keeper(home, extra=(), secret=SECRET):
    log = open(os.path.join(home, "keeper.log"), "ab")
    env = {**os.environ, "PYTHONPATH": ROOT, "ROOST_HOME": home}
    # Started with signals blocked, as a keeper may inherit them: its jobs must not.
    process = subprocess.Popen([PYTHON, "-m", "roost", "keeper", "--home", home, *extra], env=env,
                               stdin=subprocess.PIPE, stdout=log, stderr=log, start_new_session=True,
                               preexec_fn=lambda: signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1, signal.SIGINT}))
    process.stdin.write(secret.encode() + b"\n")
    process.stdin.close()
    log.close()
    return process


@pytest.fixture
def keeper(home, request):
    extra = getattr(request, "param", [])    # more arguments for `roost keeper`
    os.makedirs(os.path.join(home, "jobs"), mode=0o700)
    with as_the_daemon(home):
        process = start_keeper(home, extra)
        path = keeper_wire.socket_path(home)

        def connect():
            try:
                return KeeperConnection(path, SECRET)
            except OSError:
                assert process.poll() is None, "the keeper exited"
                return None

        connection = wait_for(connect, what="the keeper to listen")
        connection.process = connection_process = process
        connection.home = home
        yield connection
        connection.close()
        if connection_process.poll() is None:
            connection_process.kill()
        connection_process.wait(5)


def spawn(keeper, job, argv, cwd="/tmp", env=None, umask=0o022, rows=24, cols=80, **more):
    os.makedirs(os.path.join(keeper.home, "jobs", job), exist_ok=True)
    return keeper.call("spawn", job=job, argv=argv, env=env if env is not None else {"PATH": os.environ["PATH"]},
                       cwd=cwd, rows=rows, cols=cols, umask=umask, **more)


def test_hello_names_the_version_and_the_socket_is_owner_only(keeper):
    answer, _ = keeper.call("hello", version=keeper_wire.VERSION)
    assert answer["ok"] and answer["version"] == keeper_wire.VERSION and answer["pid"] == keeper.process.pid
    mode = os.stat(keeper_wire.socket_path(keeper.home)).st_mode & 0o777
    assert mode == 0o600


def test_a_job_runs_on_its_own_pty_session_with_defaults_restored(keeper):
    script = "tty; ps -o pid=,pgid=,sid= -p $$; umask; pwd; stty size; echo done"
    answer, fds = spawn(keeper, "j1", ["sh", "-c", script], cwd="/usr", umask=0o027, rows=33, cols=101)
    assert answer["ok"], answer
    pid = answer["pid"]
    lines = [line.strip() for line in read_until(fds[0], b"done").decode().splitlines()]
    assert lines[0].startswith("/dev/pts/")                       # a controlling terminal
    assert lines[1].split() == [str(pid)] * 3                     # its own group and session
    assert lines[2] == "0027" and lines[3] == "/usr" and lines[4] == "33 101"
    event = keeper.wait_event("j1")
    assert event["code"] == 0 and event["pid"] == pid
    os.close(fds[0])
    # grep reads its own mask and dispositions as the keeper gave them (a shell would
    # change its own): the keeper runs with signals blocked and ignored, the job not.
    answer, fds = spawn(keeper, "j1b", ["grep", "-E", "^Sig(Blk|Ign)", "/proc/self/status"])
    out = read_until(fds[0], b"SigIgn").decode()
    out += read_until(fds[0], b"\n").decode()
    fields = dict(line.split(":") for line in out.replace("\r", "").split("\n") if ":" in line)
    assert int(fields["SigBlk"], 16) == 0
    # Nothing ignored but glibc's two internal signals (32, 33), which cannot be named.
    assert int(fields["SigIgn"], 16) & ~((1 << 31) | (1 << 32)) == 0
    os.close(fds[0])


def test_exec_errors_come_back_as_a_clear_refusal(keeper):
    answer, fds = spawn(keeper, "j2", ["/nonexistent/program"])
    assert not answer["ok"] and "No such file or directory" in answer["error"] and not fds
    answer, _ = spawn(keeper, "j3", ["no-such-program-anywhere"])
    assert not answer["ok"] and "not found" in answer["error"]
    answer, _ = spawn(keeper, "j4", ["true"], cwd="/nonexistent")
    assert not answer["ok"] and "/nonexistent" in answer["error"]
    for bad in ("../escape", "..", ".", "a/b", ""):
        answer, _ = keeper.call("spawn", job=bad, argv=["true"], env={}, cwd="/")
        assert not answer["ok"], bad


def test_exit_status_is_recorded_and_the_master_kept_until_released(keeper):
    answer, fds = spawn(keeper, "j5", ["sh", "-c", "echo last words; exit 7"])
    master = fds[0]
    event = keeper.wait_event("j5")
    assert event["code"] == 7 and event["signal"] is None
    with open(os.path.join(keeper.home, "jobs", "j5", "exit.json")) as handle:
        recorded = json.load(handle)
    assert recorded["code"] == 7 and recorded["pid"] == answer["pid"] and recorded["version"] == 1
    os.close(master)
    # Exited but not released: still listed with its exit, and its output still there.
    listed, fds = keeper.call("fds")
    assert [item["job"] for item in listed["jobs"]] == ["j5"] and listed["jobs"][0]["exited"]["code"] == 7
    assert b"last words" in read_until(fds[0], b"last words")
    os.close(fds[0])
    keeper.call("release", job="j5")
    listed, fds = keeper.call("fds")
    assert listed["jobs"] == [] and fds == []


def test_signal_reaches_the_group_and_a_killed_job_says_so(keeper):
    answer, fds = spawn(keeper, "j6", ["sh", "-c", "sleep 30 & sleep 30; echo never"])
    sent, _ = keeper.call("signal", job="j6", signal="SIGTERM", group=True)
    assert sent["sent"]
    event = keeper.wait_event("j6")
    assert event["signal"] == signal.SIGTERM and event["code"] is None
    os.close(fds[0])
    # Its group is gone too: the background sleep got the signal.
    wait_for(lambda: not any(_in_group(answer["pid"])), what="the job's group to end")


def _in_group(pgid):
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as handle:
                    fields = handle.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == pgid and fields[0] != "Z":
                yield int(name)


def test_many_fds_travel_in_batches(keeper):
    count = 210    # more than one sendmsg may carry (SCM_MAX_FD is 253)
    pids = {}
    for index in range(count):
        answer, fds = spawn(keeper, f"m{index}", ["sleep", "60"])
        assert answer["ok"], answer
        pids[f"m{index}"] = answer["pid"]
        os.close(fds[0])
    listed, fds = keeper.call("fds")
    assert len(listed["jobs"]) == count == len(fds)
    for info, fd in zip(listed["jobs"], fds):
        assert pids[info["job"]] == info["pid"]
        assert os.isatty(fd)
        os.close(fd)
    for job in pids:
        keeper.call("signal", job=job, signal=signal.SIGKILL, group=True)


def test_bye_ends_the_keeper_once_no_job_runs(keeper):
    answer, fds = spawn(keeper, "j7", ["sleep", "30"])
    done, done_fds = spawn(keeper, "j7b", ["true"])
    keeper.wait_event("j7b")          # ended, never released: it does not hold the keeper
    keeper.call("bye")
    listed, held = keeper.call("fds")  # answered after the bye: a job runs, the keeper stays
    assert {item["job"] for item in listed["jobs"]} == {"j7", "j7b"}
    for fd in held + fds + done_fds:
        os.close(fd)
    keeper.call("signal", job="j7", signal="SIGKILL", group=True)
    assert keeper.process.wait(10) == 0
    assert not os.path.exists(keeper_wire.socket_path(keeper.home))


def test_a_hello_after_bye_keeps_the_keeper(keeper):
    answer, fds = spawn(keeper, "j9", ["sh", "-c", "sleep 0.2"])
    keeper.call("bye")
    keeper.call("hello", version=keeper_wire.VERSION)   # a new daemon came
    keeper.wait_event("j9")
    listed, held = keeper.call("fds")
    assert listed["jobs"][0]["job"] == "j9" and keeper.process.poll() is None
    for fd in held + fds:
        os.close(fd)


def test_orphans_are_reaped_by_the_keeper(keeper):
    # The shell leaves a background child and exits; the keeper (subreaper) inherits
    # and reaps it, so no zombie is left behind.
    answer, fds = spawn(keeper, "j8", ["sh", "-c", "(sleep 0.3; exit 0) & echo $!"])
    orphan = int(read_until(fds[0], b"\n").split()[0])
    keeper.wait_event("j8")
    wait_for(lambda: not os.path.exists(f"/proc/{orphan}"), what="the orphan to be reaped")
    os.close(fds[0])


def test_a_second_keeper_for_the_same_home_refuses(keeper):
    env = {**os.environ, "PYTHONPATH": ROOT}
    out = subprocess.run([PYTHON, "-m", "roost", "keeper", "--home", keeper.home], env=env,
                         input=SECRET.encode() + b"\n", capture_output=True, timeout=15)
    assert out.returncode == 1 and b"another keeper" in out.stderr
    # And none starts without a secret to check its daemon by.
    out = subprocess.run([PYTHON, "-m", "roost", "keeper", "--home", keeper.home], env=env,
                         stdin=subprocess.DEVNULL, capture_output=True, timeout=15)
    assert out.returncode == 2 and b"no secret" in out.stderr


def test_another_user_cannot_talk_to_it(keeper):
    if os.getuid() != 0:
        pytest.skip("needs root to act as another user")
    path = keeper_wire.socket_path(keeper.home)
    # Open the way to the socket for everyone, so only the keeper's own check of the
    # peer's uid stands between another user and it.
    opened = [(directory, os.stat(directory).st_mode & 0o777)
              for directory in (os.path.dirname(os.path.dirname(path)), os.path.dirname(path))]
    for directory, _ in opened:
        os.chmod(directory, 0o755)
    os.chmod(path, 0o666)
    try:
        pid = os.fork()
        if pid == 0:
            status = 2
            try:
                os.setgid(65534)
                os.setuid(65534)
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                sock.settimeout(5)
                sock.connect(path)        # the way is open: this works
                status = 1
                try:
                    sock.sendall(b'{"id":1,"op":"hello"}\n')
                    status = 0 if sock.recv(100) == b"" else 1      # closed unanswered
                except (ConnectionResetError, BrokenPipeError):
                    status = 0
            except OSError:
                status = 3
            finally:
                os._exit(status)
        _, status = os.waitpid(pid, 0)
    finally:
        os.chmod(path, 0o600)
        for directory, mode in reversed(opened):
            os.chmod(directory, mode)
    assert os.waitstatus_to_exitcode(status) == 0
    # The keeper's own user is still served.
    assert keeper.call("hello", version=1)[0]["ok"]


ALL_OPS = ("fds", "spawn", "signal", "release", "bye", "hello")


def as_a_stranger(keeper, *ops, job="held"):
    """What a process of the user that is not the daemon, and knows the secret, gets."""
    out = subprocess.run([PYTHON, os.path.join(AGENTS, "keeper_stranger.py"), keeper_wire.socket_path(keeper.home),
                          SECRET, job, *ops], capture_output=True, timeout=30, check=True)
    return json.loads(out.stdout)


def test_a_process_of_the_user_that_is_not_the_daemon_gets_nothing(keeper):
    answer, fds = spawn(keeper, "held", ["sleep", "30"])
    os.close(fds[0])
    tried = as_a_stranger(keeper, *ALL_OPS)
    # Closed at once: no answer, no fd, whatever it asked, secret or not.
    assert {op: (got["answers"], got["fds"]) for op, got in tried.items()} == {op: ([], 0) for op in ALL_OPS}
    assert keeper.process.poll() is None
    assert "is not the daemon" in keeper_log(keeper)
    # Nothing it asked was done: no job spawned, the held one not signalled, not released.
    listed, held = keeper.call("fds")
    assert [item["job"] for item in listed["jobs"]] == ["held"] and listed["jobs"][0]["exited"] is None
    os.close(held[0])
    # Nor was its bye heard: once the last job ends the keeper stays for its daemon.
    keeper.call("signal", job="held", signal="SIGKILL")
    keeper.wait_event("held")
    keeper.call("release", job="held")
    assert keeper.call("hello", version=keeper_wire.VERSION)[0]["ok"] and keeper.process.poll() is None


def test_the_daemon_s_own_process_without_the_secret_is_refused_and_closed(keeper):
    answer, fds = spawn(keeper, "held", ["sleep", "30"])
    os.close(fds[0])
    path = keeper_wire.socket_path(keeper.home)
    for first in ({"op": "fds"}, {"op": "hello", "version": keeper_wire.VERSION},
                  {"op": "hello", "version": keeper_wire.VERSION, "secret": SECRET[:-1] + "x"},
                  {"op": "hello", "secret": ["not", "text"]}):
        stranger = KeeperConnection(path)
        answer, carried = stranger.call(first.pop("op"), **first)
        assert not answer["ok"] and "serves only its daemon" in answer["error"] and carried == []
        with pytest.raises((EOFError, ConnectionResetError, BrokenPipeError)):
            stranger.sock.sendall(b'{"id": 9, "op": "fds"}\n')      # nothing more is read
            stranger.read_message()
        assert stranger.fds == []
        stranger.close()
    assert SECRET not in keeper_log(keeper)
    listed, held = keeper.call("fds")
    assert [item["job"] for item in listed["jobs"]] == ["held"]
    os.close(held[0])
    keeper.call("signal", job="held", signal="SIGKILL")


def keeper_log(keeper):
    with open(os.path.join(keeper.home, "keeper.log"), encoding="utf-8", errors="replace") as handle:
        return handle.read()


@pytest.mark.parametrize("keeper", [["--linger", "0.2"]], indirect=True)
def test_with_no_daemon_and_no_job_it_leaves_once_the_output_is_read(keeper):
    answer, fds = spawn(keeper, "j9", ["sh", "-c", "echo last words"])
    keeper.wait_event("j9")
    keeper.close()
    # Ended, but its last output is unread: it waits for a daemon as long as it takes.
    wait_for(lambda: "output not yet read" in keeper_log(keeper), what="the keeper to wait for a daemon")
    assert keeper.process.poll() is None
    again = KeeperConnection(keeper_wire.socket_path(keeper.home), SECRET)
    assert read_until(fds[0], b"last words")
    os.close(fds[0])
    again.call("release", job="j9")
    again.close()
    wait_for(lambda: keeper.process.poll() is not None, what="the keeper to leave")
    assert keeper.process.returncode == 0
    assert not os.path.exists(keeper_wire.socket_path(keeper.home))


def test_it_leaves_when_its_home_is_deleted(keeper):
    keeper.close()
    shutil.rmtree(keeper.home)
    wait_for(lambda: keeper.process.poll() is not None, what="the keeper to leave")


def test_a_carry_pipe_is_given_to_a_daemon_that_asks_and_held_across_daemons(keeper):
    answer, fds = spawn(keeper, "c1", ["sh", "-c", "echo carried; sleep 30"], carry=True)
    assert answer["carry"] is True and len(fds) == 3
    master, carry_read, carry_write = fds
    read_until(master, b"carried")
    os.write(carry_write, b"taken off the pty, not logged")   # a daemon killed half way
    for fd in fds:
        os.close(fd)
    # The next daemon gets the master and both ends: what waited in the pipe is there.
    listed, fds = keeper.call("fds", carry=True)
    assert listed["jobs"][0]["carry"] is True and len(fds) == 3
    assert os.read(fds[1], 100) == b"taken off the pty, not logged"
    for fd in fds:
        os.close(fd)
    # A daemon that does not ask (one before carry pipes) gets the master alone.
    listed, fds = keeper.call("fds")
    assert "carry" not in listed["jobs"][0] and len(fds) == 1
    os.close(fds[0])
    answer, fds = spawn(keeper, "c2", ["true"])
    assert "carry" not in answer and len(fds) == 1
    os.close(fds[0])
    keeper.call("signal", job="c1", signal="SIGKILL")


def test_probe_says_what_a_jobs_processes_wait_on(keeper):
    """Version 3 (issue 27): the keeper, every job's ancestor, reads their blocked calls;
    the job's own pty is found by inode, its controlling terminal's foreground marked."""
    answer, fds = spawn(keeper, "asks", ["sh", "-c", 'printf "name? "; read name; echo "hi $name"; sleep 300'])
    read_until(fds[0], b"name? ")
    reads = wait_for(lambda: (lambda found: found if found["verdict"] == "reads" else None)(
        keeper.call("probe", job="asks")[0]["evidence"]), what="the read seen")
    reader = reads["seen"][0]
    assert reader == {"pid": answer["pid"], "name": "sh", "does": "reads-terminal", "fg": True, "call": "read",
                      "fd": 0, "file": reads["terminal"]}
    assert reads["terminal"].startswith("/dev/pts/") and reads["foreground"] == answer["pid"]
    os.write(fds[0], b"ada\r")
    read_until(fds[0], b"hi ada")
    # Between the echo and the sleep's exec the shell is seen forking (busy too, its child
    # not there yet): the probe is asked until the sleep and the shell's wait for it are
    # both there (a timeout fails the test).
    settled = {"sleep": "sleeps", "sh": "waits-child"}
    busy = wait_for(lambda: (lambda found: found if found["verdict"] == "busy" and {
        entry["name"]: entry["does"] for entry in found["seen"]} == settled else None)(
        keeper.call("probe", job="asks")[0]["evidence"]), what="the sleep seen, the shell waiting for it")
    assert len(busy["seen"]) == 2
    os.close(fds[0])
    # A job it does not run has no evidence; nor does one that ended.
    assert keeper.call("probe", job="nobody")[0] == {"id": keeper.next_id, "ok": True, "evidence": None}
    keeper.call("signal", job="asks", signal="SIGKILL", group=True)
    keeper.wait_event("asks")
    assert keeper.call("probe", job="asks")[0]["evidence"] is None
