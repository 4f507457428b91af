"""Each job resumes its own conversation (issue 19 item 2): agents that pick their own
session id (Codex, pi) and aider's chat history, two jobs started together in one cwd,
then a reboot (kill -9 of the keeper, the daemon and every job at once). Fake agents
(tests/agents/keeps_own_session.py) write their session files as the real ones do; the
profiles take the built-in ones' `sessionFrom` and their resume's words for the job's
own, so the built-in patterns are the ones tried. Real daemon, keeper, ptys."""

import os

import pytest

from conftest import PYTHON, wait_for
from jobkit import job_record, output, power_cut, row, wait_row, write_config
from roost.client.connection import Refused
from roost.jobs import builtin_profiles

AGENT = os.path.join(os.path.dirname(__file__), "agents", "keeps_own_session.py")
TERM = {"settleMs": 200, "waiting": r"^>"}
BUILT_IN = builtin_profiles.profiles()


def own_words(profile_words, skip):
    """A built-in command or resume without its program's own first words (`skip`)."""
    return [word for word in profile_words[skip:] if word != "--no-daemon"]


def profiles():
    codex, pi, aider = BUILT_IN["codex"], BUILT_IN["pi"], BUILT_IN["aider"]
    fake = [PYTHON, AGENT]
    return {"agentProfiles": {
        "codexlike": {"command": fake + ["codex"], "resume": fake + ["codex"] + own_words(codex["resume"], 2),
                      "sessionFrom": codex["sessionFrom"], "task": "type", "term": TERM},
        "pilike": {"command": fake + ["pi"] + own_words(pi["command"], 3),
                   "resume": fake + ["pi"] + own_words(pi["resume"], 3),
                   "sessionFrom": pi["sessionFrom"], "task": "type", "term": TERM},
        "aiderlike": {"command": fake + ["aider"] + own_words(aider["command"], 1),
                      "resume": fake + ["aider"] + own_words(aider["resume"], 1), "task": "type", "term": TERM},
    }}


def launch(daemon, cwd, profile, mark, env=None):
    return daemon.call("dispatch", kind="shell", cwd=str(cwd), command=[], env={"RESUME_MARK": mark, **(env or {})},
                       name=mark, sessionFile="", origin="dispatch", profile=profile)["id"]


def talk(daemon, job_id, text):
    assert daemon.call("reply", id=job_id, text=text)["delivered"]
    wait_for(lambda: f"echo: {text}" in output(daemon.home, job_id), what=f"{text!r} echoed")


def session_of(daemon, job_id):
    return wait_for(lambda: job_record(daemon.home, job_id)["launch"].get("sessionId"),
                    what=f"job {job_id}'s session found")


def back(daemon, job_id, old_pid):
    wait_row(daemon, job_id, lambda current: current["status"] == "waiting" and current["pid"] != old_pid,
             what=f"job {job_id} back", timeout=20)
    # The screen rebuilt from the log waits at the old run's prompt already: the new run
    # is back once it has said who it is (each run prints its mark after what it resumed).
    mark = f"mark {job_record(daemon.home, job_id)['name']}"
    return wait_for(lambda: output(daemon.home, job_id).count(mark) == 2 and output(daemon.home, job_id),
                    what=f"job {job_id}'s new run to speak", timeout=20)


def test_two_jobs_in_one_folder_each_resume_their_own_session(daemon, tmp_path):
    codex_home = tmp_path / "codex-home"        # one CODEX_HOME for both, as a user has
    # Outside the jobs' folder: their jails may write it as a user's roost.json would say.
    write_config(daemon.home, dict(profiles(), sandbox={"write": [f"{codex_home}/"]}))
    work = tmp_path / "work"
    work.mkdir()
    env = {"CODEX_HOME": str(codex_home)}
    pairs = {"codexlike": [launch(daemon, work, "codexlike", f"codex-{n}", env) for n in (1, 2)],
             "pilike": [launch(daemon, work, "pilike", f"pi-{n}") for n in (1, 2)],
             "aiderlike": [launch(daemon, work, "aiderlike", f"aider-{n}") for n in (1, 2)]}
    silent = launch(daemon, work, "codexlike", "codex-silent", env)     # never says a word
    every = [job_id for ids in pairs.values() for job_id in ids] + [silent]
    for job_id in every:
        wait_row(daemon, job_id, lambda current: current["status"] == "waiting", what="each job's prompt")
    for ids in pairs.values():
        for job_id in ids:
            talk(daemon, job_id, f"said in {row(daemon, job_id)['name']}")
    sessions = {job_id: session_of(daemon, job_id) for profile in ("codexlike", "pilike") for job_id in pairs[profile]}
    assert len(set(sessions.values())) == 4
    # Codex's files are found by who holds them open: both are in the one CODEX_HOME.
    assert len(list(codex_home.glob("sessions/*/*/*/rollout-*.jsonl"))) == 2
    assert "sessionId" not in job_record(daemon.home, silent)["launch"]
    events = daemon.call("events", limit=500)["events"]
    for job_id, session in sessions.items():
        assert any(event["kind"] == "session" and event["id"] == job_id and session in event["text"]
                   for event in events)
        timeline = daemon.call("timeline", id=job_id)["entries"]
        assert [entry["id"] for entry in timeline if entry["kind"] == "session"] == [session]
    # aider's chat history is the job's own file, not the repo's shared one.
    assert not (work / ".aider.chat.history.md").exists()
    old_pids = {job_id: row(daemon, job_id)["pid"] for job_id in every}

    power_cut(daemon, every)
    daemon.start()

    for ids in pairs.values():
        for job_id in ids:
            log = back(daemon, job_id, old_pids[job_id])
            name = job_record(daemon.home, job_id)["name"]
            other = next(other for other in ids if other != job_id)
            other_name = job_record(daemon.home, other)["name"]
            assert f"earlier: said in {name}" in log and f"earlier: said in {other_name}" not in log
            if job_id in sessions:
                assert f"resumed session {sessions[job_id]}" in log
                assert f"resumed session {sessions[other]}" not in log
            else:
                assert "restored 1 lines" in log
    # One whose session was never found starts anew rather than take another's.
    log = back(daemon, silent, old_pids[silent])
    assert log.count("new conversation") == 2 and "resumed session" not in log


def test_respawn_resumes_the_found_session(daemon, tmp_path):
    write_config(daemon.home, profiles())
    job_id = launch(daemon, tmp_path, "pilike", "pi-respawn")
    wait_row(daemon, job_id, lambda current: current["status"] == "waiting", what="the prompt")
    talk(daemon, job_id, "before the stop")
    session = session_of(daemon, job_id)
    daemon.call("stop", id=job_id)
    daemon.call("respawn", id=job_id)
    wait_for(lambda: f"resumed session {session}" in output(daemon.home, job_id), what="the resume")
    wait_for(lambda: "earlier: before the stop" in output(daemon.home, job_id), what="what it said before")
    shown = daemon.cli("timeline", job_id)
    assert shown.returncode == 0 and f"session: the agent's own is {session}".encode() in shown.stdout


def test_a_bad_session_source_is_refused(daemon, tmp_path):
    write_config(daemon.home, {"agentProfiles": {"bad": {
        "command": [PYTHON, AGENT, "codex"], "resume": [PYTHON, AGENT, "codex", "resume", "{sessionId}"],
        "sessionFrom": {"openFile": "rollout-(.*)\\.jsonl"}}}})
    with pytest.raises(Refused) as refused:
        daemon.call("dispatch", kind="shell", cwd=str(tmp_path), command=[], env={}, name="",
                    sessionFile="", origin="dispatch", profile="bad")
    assert refused.value.code == "bad_request" and "group named id" in refused.value.text
    # A resume that names {sessionId} with nothing to give it one could never resume.
    write_config(daemon.home, {"agentProfiles": {"unfilled": {
        "command": [PYTHON, AGENT, "codex"], "resume": [PYTHON, AGENT, "codex", "resume", "{sessionId}"]}}})
    with pytest.raises(Refused) as refused:
        daemon.call("dispatch", kind="shell", cwd=str(tmp_path), command=[], env={}, name="",
                    sessionFile="", origin="dispatch", profile="unfilled")
    assert refused.value.code == "bad_request" and "sessionFrom" in refused.value.text
