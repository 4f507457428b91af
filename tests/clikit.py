"""The CLI as a person runs it: `python -m roost ...` on a home of its own."""

import os
import subprocess

from conftest import PYTHON, ROOT


def cli(home, *argv, env=None, timeout=30):
    environ = {**os.environ, "ROOST_HOME": home, "PYTHONPATH": ROOT, **(env or {})}
    environ.pop("ROOST_SOCKET", None) if "ROOST_SOCKET" not in (env or {}) else None
    return subprocess.run([PYTHON, "-m", "roost", *argv], env=environ, capture_output=True,
                          timeout=timeout, cwd="/")
