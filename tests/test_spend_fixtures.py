"""issue 29 item 7: the files the real agents wrote under roost (recorded by `scripts/
try-agents spend` into tests/fixtures/agents/<agent>/<version>/spend/, with what the
fake model served them in truth.json), read again by roost's readers: the tokens are
exactly what was served, whole and fed in pieces (a file read as it grows)."""

import glob
import json
import os

import pytest

from conftest import ROOT
from roost.spend.follow import LineFollower
from roost.spend.ledger import Ledger
from spendkit import READERS, read_files, totals

FIXTURES = os.path.join(ROOT, "tests", "fixtures", "agents")
KINDS = {"claude": "claude-code", "codex": "codex", "aider": "aider", "pi": "pi"}
RECORDED = sorted(glob.glob(os.path.join(FIXTURES, "*", "*", "spend", "truth.json")))


def load(path):
    with open(path, encoding="utf-8") as handle:
        truth = json.load(handle)
    files = [os.path.join(os.path.dirname(path), name) for name in truth["files"]]
    return truth, files


def test_every_agent_has_a_recording():
    assert sorted(load(path)[0]["agent"] for path in RECORDED) == ["aider", "claude", "codex", "pi"]


@pytest.mark.parametrize("path", RECORDED, ids=lambda path: path.split(os.sep)[-4])
def test_the_recorded_files_read_as_exactly_what_was_served(path):
    truth, files = load(path)
    whole, _ = totals(read_files(KINDS[truth["agent"]], files))
    assert whole == truth["served"]


@pytest.mark.parametrize("path", RECORDED, ids=lambda path: path.split(os.sep)[-4])
def test_the_recorded_files_fed_in_pieces_read_the_same(path, tmp_path):
    """As the daemon follows a live file: written a few hundred bytes at a time, read
    after each write, lines torn across writes."""
    truth, files = load(path)
    kind = KINDS[truth["agent"]]
    keep, take = READERS[kind]
    ledger = Ledger()
    for source in files:
        growing = str(tmp_path / os.path.basename(source))
        state = ledger.files.setdefault(growing, {"state": {}})["state"]
        follower = LineFollower(growing)
        with open(source, "rb") as handle:
            data = handle.read()
        with open(growing, "wb") as out:
            for start in range(0, len(data), 777):
                out.write(data[start:start + 777])
                out.flush()
                follower.read(lambda line: take(ledger, line, state), keep)
    assert totals(ledger)[0] == truth["served"]


def test_claude_codes_recording_repeats_each_response_per_content_block():
    """What the readers must get right, in the recording itself: summing every line would
    overcount, keeping the first would undercount output."""
    [path] = [path for path in RECORDED if "claude-code" in path]
    truth, files = load(path)
    lines = [json.loads(line) for name in files for line in open(name, encoding="utf-8")]
    usages = [line["message"]["usage"] for line in lines if line.get("type") == "assistant"
              and line.get("message", {}).get("model") != "<synthetic>"]
    summed = sum(usage["output_tokens"] for usage in usages)
    assert summed > truth["served"][1]


def test_codexs_recording_gives_its_windows_as_the_headers_said():
    from roost.spend import codex, windows

    [path] = [path for path in RECORDED if os.sep + "codex" + os.sep in path]
    truth, files = load(path)
    readings = []
    ledger = Ledger()
    for name in files:
        state = {}
        LineFollower(name).read(lambda line: readings.append(codex.take(ledger, line, state)), codex.keep)
    found = [window for reading in readings if reading for window in windows.from_codex(reading, now=0)]
    assert found and {name: reading["usedPercent"] for name, reading in found} == truth["windows"]
    assert all(reading["resetsAt"] > reading["at"] > 0 for _, reading in found)      # each read when it was written
