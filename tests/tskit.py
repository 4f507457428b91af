"""The TypeScript client (clients/typescript) compiled by the package's pinned tsc, once a
session, and run by node."""

import os
import shutil
import subprocess

import pytest

from conftest import ROOT


PACKAGE = os.path.join(ROOT, "clients", "typescript")


NODE = shutil.which("node")


CLIENT_JS = os.path.join(PACKAGE, "dist", "src", "roost-agent.js")


@pytest.fixture(scope="session")
def compiled():
    """The client and its test agent compiled (tsc also checks the types)."""
    tsc = os.path.join(PACKAGE, "node_modules", ".bin", "tsc")
    if not os.path.exists(tsc):
        pytest.fail(f"{tsc} is missing: run scripts/setup (it installs the TypeScript client's dev dependencies)")
    built = subprocess.run([tsc, "-p", PACKAGE], capture_output=True, text=True, timeout=180)
    assert built.returncode == 0, f"tsc failed:\n{built.stdout}{built.stderr}"
    return RECORDER
