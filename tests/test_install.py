"""scripts/install.sh on a stand-in release (a tiny program and its SHA256SUMS): it checks
the file, installs it by a rename, refuses a damaged download, and says how to get the
directory on PATH and how to complete roost's commands. scripts/release runs it for real,
over a running daemon, inside the bullseye root."""

import hashlib
import os
import re
import subprocess
import sys

from conftest import ROOT
from roost.cli.commands import COMMANDS

INSTALL = os.path.join(ROOT, "scripts", "install.sh")
NAME = f"roost-9.9.9-linux-{os.uname().machine}"


def stand_in_release(directory):
    directory.mkdir()
    program = directory / NAME
    program.write_text("#!/bin/sh\necho 'roost 9.9.9 (a stand-in)'\n")
    program.chmod(0o755)
    digest = hashlib.sha256(program.read_bytes()).hexdigest()
    (directory / "SHA256SUMS").write_text(f"{digest}  {NAME}\n{'0' * 64}  {NAME}.tar.gz\n")
    return program


def install(tmp_path, *argv):
    env = {"HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin", "TMPDIR": str(tmp_path)}
    return subprocess.run(["sh", INSTALL, *argv], env=env, capture_output=True, text=True, timeout=60)


def test_it_checks_installs_and_says_how_to_use_it(tmp_path):
    stand_in_release(tmp_path / "download")
    done = install(tmp_path, "--from", str(tmp_path / "download"))
    assert done.returncode == 0, done.stderr
    target = tmp_path / "home" / ".local" / "bin" / "roost"
    assert os.access(target, os.X_OK)
    assert f"checked {NAME} against SHA256SUMS" in done.stdout
    assert "installed roost 9.9.9 (a stand-in)" in done.stdout
    assert f"{target.parent} is not on your PATH" in done.stdout
    assert f'export PATH="{target.parent}:$PATH"' in done.stdout
    assert "complete -W" in done.stdout
    assert os.listdir(target.parent) == ["roost"], "nothing staged is left"


def test_a_damaged_download_is_not_installed(tmp_path):
    program = stand_in_release(tmp_path / "download")
    program.write_text(program.read_text() + "# damaged\n")
    done = install(tmp_path, "--from", str(tmp_path / "download"), "--dir", str(tmp_path / "bin"))
    assert done.returncode == 1
    assert f"{NAME} does not match SHA256SUMS" in done.stderr
    assert not os.path.exists(tmp_path / "bin" / "roost")


def test_the_completion_line_it_prints_lists_every_command(tmp_path):
    stand_in_release(tmp_path / "download")
    said = install(tmp_path, "--from", str(tmp_path / "download")).stdout
    line = next(line.strip() for line in said.splitlines() if line.strip().startswith("complete -W"))
    assert line.endswith(" roost")
    # The line as a user pastes it into ~/.bashrc, run by bash on the real `roost --help`.
    help_text = subprocess.run([sys.executable, "-m", "roost", "--help"], capture_output=True, text=True,
                               env={**os.environ, "PYTHONPATH": ROOT}, check=True).stdout
    words = re.fullmatch(r'complete -W "\$\(roost --help \| (sed .*)\)" roost', line).group(1)
    listed = subprocess.run(["bash", "-c", words], input=help_text, capture_output=True, text=True, check=True).stdout
    assert listed.split() == list(COMMANDS)
