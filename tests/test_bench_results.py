"""bench/RESULTS.md holds every section: one that scripts/try-agents writes stays when
scripts/bench measures its suites again, and the suites' stay when try-agents writes
its own (both keep their figures in bench/results.json and write the file from all)."""

import json
import os
import sys

import pytest

from conftest import ROOT

sys.path.insert(0, os.path.join(ROOT, "bench"))
import run  # noqa: E402

AGENTS = {"agents": {"pi": {"version": "0.73.1", "settleMs": 700, "protocol": True, "at": "now", "runs": [
    {"start": "ready", "checks": [["the model got it", True, ""]],
     "timings": {"dispatch to the task at the model": 1500.0, "answer end to waiting": [20.0, 15.0],
                 "reply to the model": 14.0, "stop to no process left": 40.0}}]}}}


def measured(suite):
    """A suite's figures as bench/results.json holds them."""
    with open(os.path.join(ROOT, "bench", "results.json")) as handle:
        return json.load(handle)[suite]["figures"]


@pytest.fixture
def bench_dir(tmp_path, monkeypatch):
    monkeypatch.setattr(run, "HERE", str(tmp_path))
    monkeypatch.setattr(run, "STORED", str(tmp_path / "results.json"))
    return tmp_path


def test_a_scripted_section_and_the_suites_keep_each_other(bench_dir):
    stored = run.load_stored()
    run.store(stored, "wire", measured("wire"), 3)
    section = run.record("agents", AGENTS, 9)
    assert "| pi (0.73.1) | 1500 ms | 20 / 15 ms (1000 ms: met) | 14 ms | 40 ms |" in section
    text = (bench_dir / "RESULTS.md").read_text()
    assert "## Real agents under roost" in text and "| pi (0.73.1) |" in text
    # scripts/bench again, for one suite: the agents' section is still there.
    stored = run.load_stored()
    assert set(stored) == {"wire", "agents"}
    run.store(stored, "startup", measured("startup"), 1)
    run.write(stored)
    text = (bench_dir / "RESULTS.md").read_text()
    assert "| pi (0.73.1) |" in text and "not measured yet: `scripts/bench jobs`" in text
