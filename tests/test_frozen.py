"""The frozen binary as a user gets it: `scripts/build` makes dist/roost once per session,
and these tests run a copy of that one file (as if downloaded) with a home and a cache of
their own: the launcher's cache, the CLI, the daemon it starts, and the environment a
job started by that daemon sees."""

import fcntl
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import threading

import pytest

from conftest import ROOT, wait_for
from roost import __version__
from roost.client.connection import Client

# What a user's shell would not carry: roost's own variables and a frozen program's.
_NOT_THE_USERS = ("ROOST_", "PI_JOB_", "PI_DAEMON_", "_PYI_", "PYINSTALLER_", "_MEIPASS",
                  "LD_LIBRARY_PATH", "XDG_CACHE_HOME", "TMPDIR", "PYTHONPATH")


@pytest.fixture(scope="session")
def binary(tmp_path_factory):
    """dist/roost, built now, copied where a download would land."""
    built = subprocess.run([os.path.join(ROOT, "scripts", "build")], cwd=ROOT,
                           capture_output=True, timeout=900)
    assert built.returncode == 0, "scripts/build failed:\n" + built.stderr.decode("utf-8", "replace")[-6000:]
    downloads = tmp_path_factory.mktemp("download")
    path = str(downloads / "roost")
    # A copy: a build running meanwhile in this checkout cannot swap the file under us.
    shutil.copy2(os.path.join(ROOT, "dist", "roost"), path)
    return path


@pytest.fixture(scope="session")
def shared_cache(tmp_path_factory):
    """One cache for the tests that are not about the cache: the binary unpacks once."""
    return str(tmp_path_factory.mktemp("cache"))


def cache_id(binary):
    with open(binary, "rb") as handle:
        head = handle.read(4096).decode("latin-1")
    return re.search(r"^roost_id='([^']+)'$", head, re.M).group(1)


def user_env(home, cache, tmpdir, **extra):
    env = {name: value for name, value in os.environ.items() if not name.startswith(_NOT_THE_USERS)}
    env.update(ROOST_HOME=home, XDG_CACHE_HOME=cache, TMPDIR=tmpdir, **extra)
    return env


def run(binary, env, *argv, timeout=60):
    return subprocess.run([binary, *argv], env=env, capture_output=True, timeout=timeout, cwd="/")


VERSION_LINE = re.compile(rf"roost {re.escape(__version__)} \(commit [0-9a-f]{{12}}, linux {os.uname().machine}, "
                          r"glibc \d+\.\d+ or newer\)\n")


def is_version_line(text):
    return VERSION_LINE.fullmatch(text) is not None


def ok(done):
    assert done.returncode == 0, (done.returncode, done.stdout.decode(), done.stderr.decode())
    return done.stdout.decode()


class FrozenRoost:
    """The downloaded binary, run for one test's home with the shared cache."""

    def __init__(self, path, cache, home, tmpdir):
        self.path = path
        self.cache = cache
        self.home = home
        self.env = user_env(home, cache, tmpdir)
        self.socket = os.path.join(home, "roost.sock")

    def __call__(self, *argv, env=None, timeout=60):
        return run(self.path, {**self.env, **(env or {})}, *argv, timeout=timeout)

    def unpacked(self):
        return os.path.join(self.cache, "roost", cache_id(self.path), "roost")


@pytest.fixture
def frozen(binary, shared_cache, home, tmp_path):
    roost = FrozenRoost(binary, shared_cache, home, str(tmp_path))
    yield roost
    if os.path.exists(roost.socket):
        roost("shutdown")   # the home fixture then kills whatever is left of this home


def daemon_pid(socket):
    with Client.connect(socket, timeout=10) as client:
        return client.call("ping")["pid"]


def gone(pid):
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(") ", 1)[1].startswith("Z")
    except FileNotFoundError:
        return True


def test_version_names_the_commit_and_the_glibc_floor(frozen):
    said = ok(frozen("--version"))
    assert is_version_line(said), said
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    assert f"(commit {head[:12]}," in said
    floor = subprocess.run([sys.executable, os.path.join(ROOT, "packaging", "glibc_floor.py"),
                            os.path.dirname(frozen.unpacked())],
                           capture_output=True, text=True, check=True).stdout.splitlines()[-1]
    assert f"glibc {floor.split()[-1]} or newer" in said


def test_the_onedir_tarball_runs_where_it_is_unpacked(binary, tmp_path):
    name = f"roost-{__version__}-linux-{os.uname().machine}"
    tarball = os.path.join(ROOT, "dist", name + ".tar.gz")
    subprocess.run(["tar", "-xzf", tarball, "-C", str(tmp_path)], check=True)
    assert sorted(os.listdir(tmp_path)) == [name]
    env = user_env(str(tmp_path / "home"), str(tmp_path / "cache"), str(tmp_path))
    assert is_version_line(ok(run(str(tmp_path / name / "roost"), env, "--version")))
    assert not os.path.exists(tmp_path / "cache"), "the onedir program needs no cache"


def test_first_run_unpacks_into_a_private_versioned_cache_once(binary, tmp_path):
    cache = str(tmp_path / "cache")
    env = user_env(str(tmp_path / "home"), cache, str(tmp_path))
    ok(run(binary, env, "--version"))
    root = os.path.join(cache, "roost")
    unpacked = os.path.join(root, cache_id(binary))
    assert cache_id(binary).startswith(__version__ + "-")
    assert os.listdir(root) == [cache_id(binary)], "no temporary directory is left"
    assert stat.S_IMODE(os.stat(root).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(unpacked).st_mode) == 0o700
    marker = os.path.join(unpacked, ".roost-complete")
    with open(marker) as handle:
        assert handle.read() == cache_id(binary) + "\n"
    first = os.stat(os.path.join(unpacked, "roost"))

    again = run(binary, env, "--version")
    assert is_version_line(ok(again)) and again.stderr == b""
    assert os.listdir(root) == [cache_id(binary)]
    assert os.stat(os.path.join(unpacked, "roost")).st_ino == first.st_ino, "the second run unpacks nothing"


def test_concurrent_first_runs_share_one_complete_copy(binary, tmp_path):
    cache = str(tmp_path / "cache")
    env = user_env(str(tmp_path / "home"), cache, str(tmp_path))
    results = [None] * 6

    def first_run(index):
        results[index] = run(binary, env, "--version")

    threads = [threading.Thread(target=first_run, args=(index,)) for index in range(len(results))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    for done in results:
        assert is_version_line(ok(done))
    assert os.listdir(os.path.join(cache, "roost")) == [cache_id(binary)]
    unpacked = os.path.join(cache, "roost", cache_id(binary))
    assert sorted(os.listdir(unpacked)) == [".roost-complete", "_internal", "roost"]


def test_an_unwritable_cache_falls_back_to_a_private_temporary_directory(binary, tmp_path):
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    env = user_env(str(tmp_path / "home"), str(blocker), str(tmpdir))   # $XDG_CACHE_HOME/roost cannot exist

    first = run(binary, env, "--version")
    assert is_version_line(ok(first))
    fallback = tmpdir / f"roost-cache-{os.getuid()}"
    assert f"cannot unpack into {blocker}/roost; using {fallback} instead" in first.stderr.decode()
    assert (fallback / cache_id(binary) / ".roost-complete").is_file()
    assert stat.S_IMODE(fallback.stat().st_mode) == 0o700

    again = run(binary, env, "--version")
    assert is_version_line(ok(again)) and again.stderr == b"", "the fallback copy is reused quietly"


def test_a_damaged_download_says_so_and_leaves_no_copy(binary, tmp_path):
    damaged = tmp_path / "roost"
    with open(binary, "rb") as source:
        data = source.read()
    damaged.write_bytes(data[: len(data) // 2])
    damaged.chmod(0o755)
    cache = tmp_path / "cache"
    env = user_env(str(tmp_path / "home"), str(cache), str(tmp_path))

    done = run(str(damaged), env, "--version")
    assert done.returncode == 126
    assert "could not be unpacked" in done.stderr.decode()
    assert os.listdir(cache / "roost") == [], "neither a copy nor a temporary directory is left"


def test_ping_starts_a_detached_daemon_from_the_cached_binary(frozen):
    pong = json.loads(ok(frozen("ping", "--json")))
    assert pong["version"] == __version__
    pid = pong["pid"]
    # The daemon runs the unpacked program itself, not a one-file copy unpacked elsewhere.
    assert os.path.realpath(f"/proc/{pid}/exe") == os.path.realpath(frozen.unpacked())
    with open(f"/proc/{pid}/cmdline", "rb") as handle:
        assert handle.read().split(b"\0")[1:3] == [b"daemon", b"--foreground"]

    status = json.loads(ok(frozen("status", "--json")))
    assert status["pid"] == pid and status["version"] == __version__

    assert "stopping" in ok(frozen("shutdown"))
    wait_for(lambda: gone(pid), timeout=15, what="the daemon to exit")
    wait_for(lambda: not os.path.exists(frozen.socket), timeout=5, what="the socket to go")


def fake_copy(root, name):
    """An unpacked copy of another release, as the launcher leaves it."""
    path = os.path.join(root, name)
    os.makedirs(os.path.join(path, "_internal"), mode=0o700)
    with open(os.path.join(path, ".roost-complete"), "w") as handle:
        handle.write(name + "\n")
    return path


def test_the_daemon_removes_other_releases_copies_that_no_program_uses(binary, tmp_path):
    cache = str(tmp_path / "cache")
    env = user_env(str(tmp_path / "home"), cache, str(tmp_path))
    ok(run(binary, env, "--version"))
    root = os.path.join(cache, "roost")
    unused = fake_copy(root, "0.0.9-0123456789abcdef")
    in_use = fake_copy(root, "0.0.8-fedcba9876543210")
    not_ours = os.path.join(root, "notes")
    os.mkdir(not_ours)
    with open(os.path.join(in_use, ".roost-complete")) as held:
        fcntl.flock(held, fcntl.LOCK_SH)        # as a program running from it holds it
        frozen = FrozenRoost(binary, cache, str(tmp_path / "home"), str(tmp_path))
        try:
            ok(frozen("ping"))
            # Renamed aside first, then removed: wait for both steps.
            wait_for(lambda: not os.path.exists(unused) and not any(
                name.startswith(".old.") for name in os.listdir(root)), what="the unused copy to be removed")
            assert sorted(os.listdir(root)) == sorted([cache_id(binary), os.path.basename(in_use), "notes"])
            # The daemon holds its own copy: a newer release's daemon leaves it alone.
            own = os.path.join(root, cache_id(binary), ".roost-complete")
            with open(own) as probe:
                with pytest.raises(BlockingIOError):
                    fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            frozen("shutdown")


def test_the_daemon_command_detaches_and_outlives_the_cli(frozen):
    cli = subprocess.Popen([frozen.path, "daemon"], env=frozen.env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, cwd="/", start_new_session=True)
    out, err = cli.communicate(timeout=60)
    assert cli.returncode == 0, err.decode()
    assert "daemon started" in out.decode()

    # The CLI has exited; the daemon answers on, in a session of its own.
    pid = daemon_pid(frozen.socket)
    assert pid != cli.pid and not gone(pid)
    assert os.getsid(pid) == pid and os.getpgid(pid) != cli.pid
    assert "already answers" in ok(frozen("daemon"))
    assert daemon_pid(frozen.socket) == pid


def test_agent_file_writes_the_bundled_client_byte_for_byte(frozen, tmp_path):
    target = tmp_path / "agent"
    target.mkdir()
    ok(frozen("agent-file", str(target)))
    with open(os.path.join(ROOT, "roost_agent.py"), "rb") as source:
        assert (target / "roost_agent.py").read_bytes() == source.read()


def write_env_to(path):
    """A job's command that leaves its whole environment in `path` (complete or absent)."""
    return ["sh", "-c", f"env > {path}.tmp && mv {path}.tmp {path}"]


def environment_written(path):
    wait_for(path.exists, timeout=20, what="the job to write its environment")
    return dict(line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)


def assert_the_users_own(job_env, library_path):
    assert job_env.get("LD_LIBRARY_PATH") == library_path
    leaked = [name for name in job_env if name.startswith(("_PYI_", "PYINSTALLER_", "_MEIPASS"))
              or name == "LD_LIBRARY_PATH_ORIG"]
    assert leaked == []


@pytest.mark.parametrize("library_path", ["/x/y", None], ids=["set", "unset"])
def test_a_job_sees_the_users_own_environment(frozen, tmp_path, library_path):
    """The bootloader puts the bundle's libraries first on LD_LIBRARY_PATH and sets
    private variables; a job started by the daemon gets the user's environment back."""
    env = {"LD_LIBRARY_PATH": library_path} if library_path else {}
    ok(frozen("ping", env=env))   # the daemon starts with this environment
    seen = tmp_path / "job.env"
    with Client.connect(frozen.socket, timeout=30) as client:
        client.call("dispatch", {"kind": "shell", "command": write_env_to(seen), "cwd": str(tmp_path),
                                 "sessionFile": "", "env": {}, "name": "env-check", "origin": "dispatch"})
    assert_the_users_own(environment_written(seen), library_path)


def test_a_job_started_by_roost_run_sees_the_users_library_path(frozen, tmp_path):
    """`roost run` sends the CLI's own environment with the job: the frozen CLI's, as the
    user had it."""
    seen = tmp_path / "job.env"
    ok(frozen("run", "--cwd", str(tmp_path), "--", *write_env_to(seen), env={"LD_LIBRARY_PATH": "/x/y"}))
    assert_the_users_own(environment_written(seen), "/x/y")


def test_a_job_of_the_binary_runs_the_binarys_own_roost(frozen, tmp_path):
    """Issue 18: `roost` inside a job is the binary's, with no roost on the user's PATH."""
    ok(frozen("ping"))
    seen = tmp_path / "inside.txt"
    script = f"command -v roost > {seen}.tmp; roost --version >> {seen}.tmp; roost task list --json >> {seen}.tmp; " \
             f"mv {seen}.tmp {seen}"
    with Client.connect(frozen.socket, timeout=30) as client:
        client.call("dispatch", {"kind": "shell", "command": ["/bin/sh", "-c", script], "cwd": str(tmp_path),
                                 "sessionFile": "", "env": {"PATH": "/usr/bin:/bin"}, "name": "inside",
                                 "origin": "dispatch"})
    wait_for(seen.exists, timeout=20, what="the job to run roost")
    where, version, listed = seen.read_text().split("\n", 2)
    assert where == os.path.join(frozen.home, "bin", "roost")
    assert is_version_line(version + "\n") and json.loads(listed) == {"tasks": []}
    with open(where) as handle:
        assert frozen.unpacked() in handle.read()


def test_the_built_in_profiles_and_the_pi_extension_are_in_the_binary(frozen):
    listed = {entry["name"]: entry for entry in json.loads(ok(frozen("profiles", "--json")))["profiles"]}
    assert {"claude", "codex", "aider", "pi"} <= set(listed)
    assert {listed[name]["source"] for name in ("claude", "codex", "aider", "pi")} == {"built-in"}
    extension = listed["pi"]["command"][2]
    assert extension.startswith(os.path.dirname(frozen.unpacked()) + os.sep)   # its own unpacked copy
    client = os.path.join(os.path.dirname(extension), "..", "src", "roost-agent.ts")
    tools = os.path.join(os.path.dirname(extension), "tools.ts")
    for shipped, source in ((extension, ("pi", "roost.ts")), (tools, ("pi", "tools.ts")),
                            (client, ("src", "roost-agent.ts"))):
        with open(shipped, "rb") as got, open(os.path.join(ROOT, "clients", "typescript", *source), "rb") as want:
            assert got.read() == want.read()


def test_schedules_and_the_built_in_concierge_run_from_the_binary(frozen):
    # cronsim is in the bundle: a cron schedule is read and armed.
    added = json.loads(ok(frozen("schedule", "add", "nightly", "cron 30 2 * * *", "--json", "--", "true")))
    assert added["when"] == 'cron "30 2 * * *"' and added["nextAt"]
    # The built-in concierge is the binary itself (`roost concierge builtin`), speaking
    # through the bundled roost_agent.py.
    ok(frozen("concierge", "on"))
    wait_for(lambda: json.loads(ok(frozen("concierge", "status", "--json")))["summary"] == "watching the sessions",
             timeout=30, what="the built-in concierge's first report")


def test_the_manual_is_in_the_binary(frozen, home):
    """`roost help` reads docs/ from the bundle: every page of the checkout's, shown as
    the checkout shows it."""
    from_source = {**os.environ, "ROOST_HOME": home, "PYTHONPATH": ROOT}
    for argv in (["help"], ["help", "configuration"], ["help", "where-things-go"]):
        source = subprocess.run([sys.executable, "-m", "roost", *argv], env=from_source, capture_output=True,
                                timeout=60, cwd="/")
        assert ok(frozen(*argv)) == source.stdout.decode() != ""
    assert "  jobs " in ok(frozen("help"))
