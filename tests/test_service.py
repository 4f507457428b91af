"""`roost service install|remove` (issue 19 item 2): the `systemd --user` unit that starts
roost's daemon at login. The unit as written, its commands run as systemd would run
them (one daemon however often; the keeper and the jobs kept when it stops), idempotent,
the person's alone; and `systemctl --user` called with argv lists where systemd runs (a
stand-in `systemctl` on PATH: this machine runs no systemd)."""

import json
import os
import shlex
import shutil
import stat
import subprocess

import pytest

from clikit import cli
from conftest import PYTHON, ROOT, wait_for
from jobkit import agent, alive, keeper_pid


def service(home, tmp_path, *words, env=None):
    environ = {"XDG_CONFIG_HOME": str(tmp_path / "config"), **(env or {})}
    for name in ("ROOST_JOB_ID", "PI_JOB_ID", "ROOST_JOB_TOKEN", "PI_JOB_TOKEN", "ROOST_JOB_PERSON"):
        environ.setdefault(name, "")
    done = cli(home, "service", *words, env=environ)
    return done


def unit_file(tmp_path):
    return tmp_path / "config" / "systemd" / "user" / "roost.service"


def unit_lines(path):
    """{key: [values]} of the unit's lines."""
    found = {}
    for line in path.read_text().splitlines():
        if "=" in line and not line.startswith("#"):
            key, value = line.split("=", 1)
            found.setdefault(key, []).append(value)
    return found


def unit_env(lines):
    return dict(shlex.split(value)[0].split("=", 1) for value in lines["Environment"])


def test_install_writes_the_unit_that_runs_this_roost(home, tmp_path):
    done = service(home, tmp_path, "install", "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    path = unit_file(tmp_path)
    assert result["unit"] == str(path) and result["written"] and result["home"] == home
    # No systemd here: written, not enabled, and said how.
    assert result["systemd"] is False and result["enabled"] is False
    assert "systemctl --user enable roost.service" in result["note"]
    assert stat.S_IMODE(path.stat().st_mode) & 0o022 == 0 and path.stat().st_mode & 0o600 == 0o600
    lines = unit_lines(path)
    assert shlex.split(lines["ExecStart"][0]) == [PYTHON, "-m", "roost", "daemon"]
    assert shlex.split(lines["ExecStop"][0]) == [PYTHON, "-m", "roost", "shutdown", "--keep-workers"]
    environment = unit_env(lines)
    assert environment["ROOST_HOME"] == home and environment["PYTHONPATH"] == ROOT
    assert lines["KillMode"] == ["process"] and lines["Type"] == ["oneshot"]
    assert lines["WantedBy"] == ["default.target"]
    assert not os.path.exists(os.path.join(home, "roost.sock")), "install must not start a daemon"
    # Again: the same unit, not written twice.
    before = path.read_bytes()
    again = json.loads(service(home, tmp_path, "install", "--json").stdout)
    assert again["written"] is False and path.read_bytes() == before
    shown = service(home, tmp_path, "install")
    assert shown.returncode == 0 and b"already up to date" in shown.stdout and b"systemctl --user" in shown.stdout


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="no systemd-analyze here")
def test_systemd_analyze_verifies_the_unit(home, tmp_path):
    assert service(home, tmp_path, "install").returncode == 0
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700)
    done = subprocess.run(["systemd-analyze", "verify", "--user", str(unit_file(tmp_path))], capture_output=True,
                          text=True, env={**os.environ, "XDG_RUNTIME_DIR": str(runtime)}, timeout=60)
    assert done.returncode == 0 and not done.stderr.strip(), done.stderr


def run_as_systemd(path, key):
    """The unit's `key` command, run with the unit's environment (as systemd would)."""
    lines = unit_lines(path)
    env = {"HOME": os.environ["HOME"], **unit_env(lines)}
    return subprocess.run(shlex.split(lines[key][0]), env=env, capture_output=True, text=True, timeout=60,
                          cwd="/")


def test_the_units_commands_start_one_daemon_and_stop_it_without_its_jobs(home, tmp_path):
    assert service(home, tmp_path, "install").returncode == 0
    path = unit_file(tmp_path)
    started = run_as_systemd(path, "ExecStart")
    assert started.returncode == 0, started.stderr
    socket = os.path.join(home, "roost.sock")
    assert os.path.exists(socket)
    first_lock = open(os.path.join(home, "daemon.lock")).read()
    # A second start, as at a second login: the daemon that answers is the one.
    again = run_as_systemd(path, "ExecStart")
    assert again.returncode == 0 and "already answers" in again.stdout
    assert open(os.path.join(home, "daemon.lock")).read() == first_lock
    shown = cli(home, "run", "--json", *agent("prompt_echo.py", "0.1"))
    assert shown.returncode == 0, shown.stderr
    job_id = json.loads(shown.stdout)["id"]
    job_pid = wait_for(lambda: _row(home, job_id).get("pid"), what="the job's pid")
    keeper = keeper_pid(home)
    stopped = run_as_systemd(path, "ExecStop")
    assert stopped.returncode == 0, stopped.stderr
    wait_for(lambda: not os.path.exists(socket), what="the daemon gone")
    assert alive(keeper) and alive(job_pid), "the keeper and the job outlive the daemon"
    # The next start (the next login) adopts them.
    assert run_as_systemd(path, "ExecStart").returncode == 0
    assert _row(home, job_id)["pid"] == job_pid
    cli(home, "shutdown")


def _row(home, job_id):
    listing = json.loads(cli(home, "list", "--all", "--json").stdout)
    return next(item for item in listing["jobs"] if item["id"] == job_id)


def test_remove_removes_it_and_may_be_run_again(home, tmp_path):
    assert service(home, tmp_path, "install").returncode == 0
    done = service(home, tmp_path, "remove", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["removed"] is True and not unit_file(tmp_path).exists()
    again = service(home, tmp_path, "remove", "--json")
    assert again.returncode == 0 and json.loads(again.stdout)["removed"] is False


def test_a_job_may_not_install_or_remove_it(home, tmp_path):
    inside = {"ROOST_JOB_ID": "abcd1234", "ROOST_JOB_TOKEN": "t"}
    for words in (("install",), ("remove",)):
        refused = service(home, tmp_path, *words, env=inside)
        assert refused.returncode == 1 and b"inside roost job abcd1234" in refused.stderr
    assert not unit_file(tmp_path).exists()
    # The person's own shell under roost (`roost run --as-me`) is the person.
    mine = service(home, tmp_path, "install", env={**inside, "ROOST_JOB_PERSON": "1"})
    assert mine.returncode == 0 and unit_file(tmp_path).exists()


def test_where_systemd_runs_it_is_enabled_and_disabled(home, tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "systemctl.calls"
    fake = bin_dir / "systemctl"
    # A stand-in for systemctl: each call's argv, one JSON list a line.
    fake.write_text(f"#!{PYTHON}\nimport json, sys\nopen({str(calls)!r}, 'a').write(json.dumps(sys.argv[1:]) + '\\n')\n"
                    "print('running' if sys.argv[1:] == ['--user', 'is-system-running'] else '')\n")
    fake.chmod(0o755)
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}"}
    installed = json.loads(service(home, tmp_path, "install", "--json", env=env).stdout)
    assert installed["systemd"] is True and installed["enabled"] is True
    said = [json.loads(line) for line in calls.read_text().splitlines()]
    assert said[-2:] == [["--user", "daemon-reload"], ["--user", "enable", "roost.service"]]
    removed = json.loads(service(home, tmp_path, "remove", "--json", env=env).stdout)
    assert removed["disabled"] is True and not unit_file(tmp_path).exists()
    said = [json.loads(line) for line in calls.read_text().splitlines()]
    assert ["--user", "disable", "roost.service"] in said and said[-1] == ["--user", "daemon-reload"]
