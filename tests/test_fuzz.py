"""A short run of bench/fuzz.py against a test daemon: 2,000 random and mutated request
lines and 300 messages to `roost mcp`, with a fixed seed; no internal error, no silence,
no traceback in the daemon's log (the fixture checks that too)."""

import os
import sys

from conftest import ROOT

sys.path.insert(0, os.path.join(ROOT, "bench"))
import fuzz  # noqa: E402


def test_a_short_fuzz_run_finds_nothing(daemon):
    said = []
    problems = fuzz.run(fuzz.Target(daemon.socket, daemon.home, daemon.env), 20261201, 2000, 300, said.append)
    assert problems == [], "\n".join(said)
    assert said[-1] == "found nothing"
