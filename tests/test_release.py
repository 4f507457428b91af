"""The release's glibc check: `scripts/release check-glibc`, the step that fails a release
whose bundle needs a glibc newer than 2.31, run here on tiny planted files. (The release
build itself needs a Debian root and minutes: it is `scripts/release`, not this suite.)"""

import os
import platform
import shutil
import subprocess

import pytest

from conftest import ROOT

RELEASE = os.path.join(ROOT, "scripts", "release")

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc to plant ELF files")


def build(tmp_path, name, source, *flags):
    """A tiny ELF file compiled here from C source."""
    source_path = tmp_path / (name + ".c")
    source_path.write_text(source)
    output = tmp_path / "bundle" / name
    output.parent.mkdir(exist_ok=True)
    subprocess.run(["gcc", "-O1", *flags, "-o", str(output), str(source_path)], check=True, capture_output=True)
    return output


def check_glibc(*paths):
    return subprocess.run([RELEASE, "check-glibc", *map(str, paths)], capture_output=True, text=True, timeout=60)


def old_library(tmp_path):
    """A shared library whose only versioned need is puts@GLIBC_2.2.5."""
    return build(tmp_path, "libold.so", '#include <stdio.h>\nvoid hello(void) { puts("hello"); }\n',
                 "-shared", "-fPIC")


def test_a_bundle_within_the_floor_passes(tmp_path):
    library = old_library(tmp_path)
    (tmp_path / "bundle" / "notes.txt").write_text("not an ELF file: skipped\n")
    done = check_glibc(tmp_path / "bundle")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [f"GLIBC_2.2.5    {library}", "glibc floor: 2.2.5"]


def test_a_planted_file_above_the_floor_fails_the_release(tmp_path):
    # Every program linked against glibc 2.34 or newer needs __libc_start_main@GLIBC_2.34.
    glibc = platform.libc_ver()
    if glibc[0] != "glibc" or tuple(map(int, glibc[1].split("."))) < (2, 34):
        pytest.skip(f"needs a build machine with glibc 2.34 or newer, not {glibc}")
    old_library(tmp_path)
    planted = build(tmp_path, "planted", "int main(void) { return 0; }\n")
    done = check_glibc(tmp_path / "bundle")
    assert done.returncode == 1
    assert done.stdout.splitlines()[0].split() == ["GLIBC_2.34", str(planted)]
    assert done.stdout.splitlines()[-1] == "glibc floor: 2.34"
    assert f"glibc floor 2.34 is above 2.31: 1 file(s) need more, the first {planted}" in done.stderr


def test_the_floor_is_what_readelf_reads(tmp_path):
    readelf = shutil.which("readelf")
    if readelf is None:
        pytest.skip("needs readelf (binutils)")
    planted = build(tmp_path, "planted", "int main(void) { return 0; }\n")
    listed = subprocess.run([readelf, "-V", "-W", str(planted)], capture_output=True, text=True, check=True).stdout
    versions = {word[len("GLIBC_"):] for word in listed.split() if word.startswith("GLIBC_2")}
    highest = max(versions, key=lambda version: tuple(map(int, version.split("."))))
    done = check_glibc(planted)
    assert done.stdout.splitlines()[-1] == f"glibc floor: {highest}"
