"""Shell completion (issue 18): `roost __complete` from the commands' usage texts and the
daemon's jobs, and `roost completion bash` run in a real bash."""

import os
import shutil
import subprocess

import pytest

from conftest import PYTHON, ROOT
from jobkit import agent, dispatch


def complete(daemon_or_env, *words):
    env = daemon_or_env.env if hasattr(daemon_or_env, "env") else daemon_or_env
    result = subprocess.run([PYTHON, "-m", "roost", "__complete", *words], env=env, capture_output=True,
                            timeout=30)
    assert result.returncode == 0, result.stderr
    return result.stdout.decode().splitlines()


def test_commands_options_and_words(daemon):
    assert complete(daemon, "at") == ["attach"]
    assert "hub" in complete(daemon, "") and "completion" in complete(daemon, "")
    assert complete(daemon, "list", "--w") == ["--watch"]
    assert complete(daemon, "completion", "") == ["bash", "fish", "zsh"]
    assert complete(daemon, "task", "cl") == ["claim", "claim-paths", "cleanup"]
    assert complete(daemon, "notify", "") == ["ntfy", "test"]
    assert complete(daemon, "nosuch", "") == []


def test_a_jobs_id_and_name_from_the_daemon(daemon):
    job_id = dispatch(daemon, agent("works_a_while.py", 60, 0.2), name="builder")
    assert set(complete(daemon, "attach", "")) == {job_id, "builder"}
    assert complete(daemon, "stop", "bu") == ["builder"]
    assert complete(daemon, "reply", job_id[:3]) == [job_id]
    assert complete(daemon, "task", "claim", "") == []          # a task's id is not a job's


def test_no_daemon_is_started_by_a_tab(home):
    env = {**os.environ, "ROOST_HOME": home, "PYTHONPATH": ROOT}
    env.pop("ROOST_SOCKET", None)
    assert complete(env, "attach", "") == []
    assert not os.path.exists(os.path.join(home, "roost.sock"))


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash")
def test_the_bash_script_completes_in_bash(daemon, tmp_path):
    job_id = dispatch(daemon, agent("works_a_while.py", 60, 0.2), name="builder")
    shim = tmp_path / "roost"
    shim.write_text(f"#!/bin/sh\nexec {PYTHON} -m roost \"$@\"\n")
    shim.chmod(0o755)
    script = subprocess.run([PYTHON, "-m", "roost", "completion", "bash"], env=daemon.env,
                            capture_output=True, check=True).stdout.decode()
    probe = (script + 'COMP_WORDS=(roost att); COMP_CWORD=1; _roost; echo "${COMPREPLY[*]}"\n'
             'COMP_WORDS=(roost stop ""); COMP_CWORD=2; _roost; echo "${COMPREPLY[*]}"\n')
    result = subprocess.run(["bash", "-c", probe], env={**daemon.env, "PATH": f"{tmp_path}:{os.environ['PATH']}"},
                            capture_output=True, timeout=60)
    lines = result.stdout.decode().splitlines()
    assert lines[0] == "attach", result.stderr
    assert set(lines[1].split()) == {job_id, "builder"}


@pytest.mark.parametrize("shell", ["zsh", "fish"])
def test_the_other_scripts(daemon, shell):
    script = subprocess.run([PYTHON, "-m", "roost", "completion", shell], env=daemon.env,
                            capture_output=True, check=True).stdout.decode()
    assert "roost __complete" in script
    if shutil.which(shell):
        checked = subprocess.run([shell, "-n"], input=script.encode(), capture_output=True)
        assert checked.returncode == 0, checked.stderr


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash")
def test_bash_quotes_candidates_and_never_expands_them(daemon, tmp_path):
    """A job named `*` completes as `\\*`, not as the files of the current directory; one
    whose name holds `;` or `$(...)` is inserted quoted, never run (issue 26 item 5)."""
    starred = dispatch(daemon, ["sleep", "60"], name="*")
    hostile = dispatch(daemon, ["sleep", "60"], name="x;touch$(id)")
    shim = tmp_path / "bin" / "roost"
    shim.parent.mkdir()
    shim.write_text(f"#!/bin/sh\nexec {PYTHON} -m roost \"$@\"\n")
    shim.chmod(0o755)
    here = tmp_path / "cwd"
    here.mkdir()
    for name in ("a-file-here", "another-file"):
        (here / name).write_text("")
    script = subprocess.run([PYTHON, "-m", "roost", "completion", "bash"], env=daemon.env,
                            capture_output=True, check=True).stdout.decode()
    probe = script + 'COMP_WORDS=(roost stop ""); COMP_CWORD=2; _roost; printf "%s\\n" "${COMPREPLY[@]}"\n'
    result = subprocess.run(["bash", "-c", probe], env={**daemon.env, "PATH": f"{shim.parent}:{os.environ['PATH']}"},
                            cwd=here, capture_output=True, timeout=60)
    offered = set(result.stdout.decode().splitlines())
    assert offered == {starred, hostile, "\\*", "x\\;touch\\$\\(id\\)"}, result.stderr
