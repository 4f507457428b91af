"""The drift canary: every recorded screen of the agents the built-in profiles are for
(tests/fixtures/agents/<agent>/<version>/, at each version a profile says it was
recorded on) is judged through that profile as roost's daemon judges a screen
(roost.term.reading.TermProfile), and must read as its label says: working, waiting,
a dialog (with its question and choices), a usage limit (with the time it resets,
read as of when the screen first showed it, in the zone the agent ran in) or unknown. Each screen is judged as `peek`
printed it, padded to the terminal's 40 rows (what the daemon's judge gets), and
rebuilt from the bytes the agent wrote (its `.output.bin` through roost's Screen).
The patterns must also stay cheap: anchored and linear, under 2 ms on a 40x120 screen
however it is filled."""

import json
import os
import re
import time

import pytest

from conftest import ROOT
from roost.jobs import builtin_profiles
from roost.term.reading import TermProfile
from roost.term.screen.screen import Screen

FIXTURES = os.path.join(ROOT, "tests", "fixtures", "agents")
# Each built-in profile's recordings: the folder of its agent under FIXTURES.
RECORDINGS = {"claude": "claude-code", "codex": "codex", "aider": "aider", "pi": "pi"}
ROWS, COLS = 40, 120
PATTERNS = ("working", "waiting", "dialog", "question", "choices", "limit")
COST_LIMIT_S = 0.002
PROFILES = builtin_profiles.profiles()


def recordings():
    """(profile, version, index entry, folder) of every recording of every profile."""
    found = []
    for name in sorted(PROFILES):
        for version in PROFILES[name]["recordedOn"]:
            folder = os.path.join(FIXTURES, RECORDINGS[name], version)
            with open(os.path.join(folder, "index.json"), encoding="utf-8") as handle:
                found += [(name, version, entry, folder) for entry in json.load(handle)]
    return found


ALL = recordings()


def label(case):
    name, version, entry, _ = case
    return f"{name}-{version}-{entry['file'].removesuffix('.screen.txt')}"


def read(folder, name, mode="r"):
    with open(os.path.join(folder, name), mode, **({} if "b" in mode else {"encoding": "utf-8"})) as handle:
        return handle.read()


def padded(lines):
    return lines + [""] * max(0, ROWS - len(lines))


def replayed(raw):
    screen = Screen(ROWS, COLS)
    screen.feed(raw)
    return screen.lines()


def judged_as(profile, lines, entry):
    """The reading of `lines` (typed: the label's own, since only the label says
    whether anything had been typed yet), as of when the screen was seen (`seenAt`) in
    the zone the agent ran in (`tz`): what a reset text such as "in 20s" or "4:14am"
    is counted from."""
    return profile.judge(lines, typed=entry["waitingFor"] == "question", seen_ms=entry.get("seenAt"),
                         tz_name=entry.get("tz"))


def is_limit(entry):
    return entry["state"] == "blocked" and entry["waitingFor"] == "limit"


def assert_reads_as_labelled(reading, entry, how):
    state = entry["state"]
    shown = f"{how}: read {reading}, labelled {state}"
    if state == "working":
        assert reading["state"] == "working", shown
    elif state == "waiting":
        assert (reading["state"], reading["status"]) == ("blocked", "waiting"), shown
        assert reading["waitingFor"] == entry["waitingFor"], shown
    elif is_limit(entry):
        assert (reading["state"], reading["status"], reading["waitingFor"]) == ("blocked", "waiting", "limit"), shown
        assert reading["resetsAt"] == entry["resetsAt"], shown
        assert reading["why"].get("reset") == entry["resetText"], shown
    elif state == "dialog":
        assert (reading["state"], reading["waitingFor"]) == ("blocked", "dialog"), shown
        assert reading["question"] == " ".join(entry["question"].split()), shown
        assert reading["choices"] == [" ".join(choice.split()) for choice in entry["choices"]], shown
    else:
        assert (reading["state"], reading["status"]) == ("blocked", None), shown


def test_every_built_in_profile_has_recordings_for_each_version_it_names():
    assert set(PROFILES) == set(RECORDINGS)
    for name, profile in PROFILES.items():
        assert profile["recordedOn"], name
        for version in profile["recordedOn"]:
            assert os.path.isfile(os.path.join(FIXTURES, RECORDINGS[name], version, "index.json")), (name, version)


@pytest.mark.parametrize("case", ALL, ids=label)
def test_a_recorded_screen_reads_as_its_label_says(case):
    name, _, entry, folder = case
    profile = TermProfile(PROFILES[name]["term"])
    lines = read(folder, entry["file"]).split("\n")
    assert_reads_as_labelled(judged_as(profile, lines, entry), entry, "as peeked")
    assert_reads_as_labelled(judged_as(profile, padded(lines), entry), entry, "padded to 40 rows")
    if entry["state"] == "dialog":
        # A dialog must never look like a prompt waiting for text: roost would type into it.
        assert profile.waiting is None or not profile.waiting.search("\n".join(padded(lines)))


LIMITS = {name: re.compile(profile["term"]["limit"], re.MULTILINE) for name, profile in PROFILES.items()
          if profile["term"].get("limit")}


def test_every_built_in_profile_reads_limits_and_has_a_limit_recording_and_one_resumed_from_it():
    for name, profile in PROFILES.items():
        assert name in LIMITS, name
        files = [entry["file"] for case_name, _, entry, _ in ALL if case_name == name]
        assert any(is_limit(entry) for case_name, _, entry, _ in ALL if case_name == name), name
        assert "limit-resumed.screen.txt" in files, name


@pytest.mark.parametrize("case", [case for case in ALL if not is_limit(case[2])], ids=label)
def test_a_screen_not_at_a_limit_never_matches_the_limit_pattern(case):
    """Anchored to the prompt right under the message: once the agent went on (it was
    told `continue` and answered, it retries, it shows a menu) the old message on
    screen is not a limit, whichever pattern decides the reading."""
    name, _, entry, folder = case
    text = read(folder, entry["file"])
    if name in LIMITS:
        assert LIMITS[name].search(text) is None
        assert LIMITS[name].search("\n".join(padded(text.split("\n")))) is None


REPLAYED = [case for case in ALL if case[2].get("output")]


@pytest.mark.parametrize("case", REPLAYED, ids=label)
def test_the_recorded_bytes_through_roosts_screen_read_as_labelled(case):
    name, _, entry, folder = case
    profile = TermProfile(PROFILES[name]["term"])
    lines = replayed(read(folder, entry["output"], "rb"))
    if entry.get("replayState"):
        # The live screen had gone stale (it is what the label is of); the bytes give the
        # screen the agent really ended on, which reads as that.
        entry = dict(entry, state=entry["replayState"], waitingFor=entry.get("replayWaitingFor"))
    else:
        assert "\n".join(lines).rstrip("\n") == read(folder, entry["file"]).rstrip("\n")
    assert_reads_as_labelled(judged_as(profile, lines, entry), entry, "replayed")


# -- what the patterns cost -------------------------------------------------------------

def widened(line):
    """A row as wide as the terminal, its own text repeated."""
    return (line * (COLS // max(1, len(line)) + 1))[:COLS] if line else ""


def hard_screens():
    """Screens each pattern must be cheap on: 40 rows of spaces, of `x`, of `─`, and every
    recording padded to 40 rows, followed by 40 rows of spaces and of `x`, and its own
    rows repeated down the screen, each repeated across it."""
    screens = [("spaces", "\n".join([" " * COLS] * ROWS)), ("x", "\n".join(["x" * COLS] * ROWS)),
               ("rules", "\n".join(["─" * COLS] * ROWS))]
    for case in ALL:
        _, _, entry, folder = case
        lines = read(folder, entry["file"]).split("\n")
        shown = [line for line in lines if line.strip()] or [""]
        screens += [
            (f"{label(case)} padded", "\n".join(padded(lines))),
            (f"{label(case)} + spaces", "\n".join(lines + [" " * COLS] * ROWS)),
            (f"{label(case)} + x", "\n".join(lines + ["x" * COLS] * ROWS)),
            (f"{label(case)} repeated", "\n".join(widened(shown[row % len(shown)]) for row in range(ROWS))),
        ]
    return screens


def cost(pattern, text, tries=5):
    """The time one pass of `pattern` over `text` takes (finditer, as the question and
    choices are read): the best of up to `tries`, stopping once one is under the limit,
    so a busy machine does not fail it."""
    best = float("inf")
    for _ in range(tries):
        started = time.perf_counter()
        for _ in pattern.finditer(text):
            pass
        best = min(best, time.perf_counter() - started)
        if best < COST_LIMIT_S:
            break
    return best


@pytest.mark.parametrize("name", sorted(PROFILES))
def test_no_pattern_of_a_built_in_profile_takes_over_2_ms_on_a_screen(name):
    term = PROFILES[name]["term"]
    screens = hard_screens()
    slow = []
    for key in PATTERNS:
        if term.get(key) is None:
            continue
        pattern = re.compile(term[key], re.MULTILINE)
        for what, text in screens:
            spent = cost(pattern, text)
            if spent >= COST_LIMIT_S:
                slow.append(f"{key} on {what}: {spent * 1000:.2f} ms")
    assert slow == []


def test_the_cost_check_catches_a_pattern_that_backtracks():
    """Three quantifiers that each take spaces, over rows of spaces (cubic in a row's
    length), are what the limit is for."""
    pattern = re.compile(r"^ *[^\n]* *\S", re.MULTILINE)
    assert cost(pattern, "\n".join([" " * COLS] * ROWS), tries=1) >= COST_LIMIT_S


# -- how a dialog is read ---------------------------------------------------------------

QUESTION_SCREEN = ["Earlier: is this a question?", "", " Do you want to proceed?", "",
                   " ❯ 1. Yes", "   2. No (recommended)", "", " Esc to cancel"]


def test_a_question_pattern_gives_its_last_match_and_the_choices_after_it():
    profile = TermProfile({"dialog": r"^ {1,4}❯ \d+\. \S", "question": r"^ ?(?P<question>\S[^\n?]*\?)$",
                           "choices": r"^ {1,4}(?:❯ )?(?P<key>\d+)\. (?P<label>\S.*)$"})
    reading = profile.judge(QUESTION_SCREEN, typed=False)
    assert reading["waitingFor"] == "dialog" and reading["question"] == "Do you want to proceed?"
    assert reading["choices"] == ["Yes", "No (recommended)"]


def test_without_a_question_pattern_the_dialog_reads_as_before():
    """The `dialog` pattern's own `question` group, and `choices`' `choice` group."""
    profile = TermProfile({"dialog": r"^ (?P<question>Do you want to proceed\?)$",
                           "choices": r"^\W{0,3}(?P<choice>\d\. .+)$"})
    reading = profile.judge(QUESTION_SCREEN, typed=False)
    assert reading["question"] == "Do you want to proceed?"
    assert reading["choices"] == ["1. Yes", "2. No (recommended)"]
    # A question pattern that finds nothing leaves it so too.
    profile = TermProfile({"dialog": r"^ (?P<question>Do you want to proceed\?)$", "question": r"^never$"})
    assert profile.judge(QUESTION_SCREEN, typed=False)["choices"] == ["1. Yes", "2. No (recommended)"]


def test_a_question_pattern_that_does_not_compile_is_refused():
    from roost.errors import RoostError
    from roost.jobs.profiles import check_term

    with pytest.raises(RoostError) as refused:
        check_term({"question": "(unclosed"}, "agentProfiles.x.term")
    assert refused.value.code == "bad_request" and "agentProfiles.x.term.question" in refused.value.text
