"""Every job in a jail of its own (issue 26): each reproduction of the issue, tried from
inside a job as an attacker would (a plain shell job, same uid), and what the jail keeps
as it was (exit statuses, Ctrl-C, stop, `roost` inside a job).

Jobs here run jailed, the default; a test that needs one without says so (`"sandbox":
false`, `--no-sandbox`)."""

import json
import os
import shutil
import signal
import tempfile

import pytest

from conftest import PYTHON, wait_for
from jobkit import (agent, alive, dispatch, job_processes, job_record, job_token, keeper_pid, output, row, wait_row,
                    wait_state, write_config)
from roost.keeper import wire as keeper_wire

SPEAK_FOR = ("import json, os, socket, sys; s = socket.socket(socket.AF_UNIX); s.connect(os.environ['ROOST_SOCKET']); "
             "s.sendall(json.dumps({'id': 1, 'op': 'speak_for', 'args': {'id': sys.argv[1], "
             "'token': open(sys.argv[2]).read().strip()}}).encode() + b'\\n'); "
             "open(sys.argv[3], 'w').write(s.makefile().readline())")


def read_json(path, timeout=30, what=None):
    def ready():
        try:
            with open(path) as handle:
                return json.load(handle)
        except (OSError, ValueError):
            return None
    return wait_for(ready, timeout=timeout, what=what or f"{path} to be written")


@pytest.fixture
def outside():
    """Directories neither under /tmp (a jail's own) nor the job's: on the host's /var/tmp."""
    base = tempfile.mkdtemp(prefix="roost-jail-", dir="/var/tmp")
    yield base
    shutil.rmtree(base, ignore_errors=True)


def test_a_jailed_job_reaches_neither_the_keeper_nor_another_job_and_writes_only_what_it_may(daemon, tmp_path,
                                                                                             outside):
    granted = os.path.join(outside, "granted")
    elsewhere = os.path.join(outside, "elsewhere")
    os.mkdir(granted)
    os.mkdir(elsewhere)
    write_config(daemon.home, {"sandbox": {"write": [granted]}})
    other = dispatch(daemon, ["sleep", "300"], name="other")
    wait_state(daemon, other, "working", "blocked")
    work = tmp_path / "work"
    work.mkdir()
    job_id = dispatch(daemon, agent("jail_probe.py", keeper_wire.socket_path(daemon.home),
                                    os.path.join(daemon.home, "jobs", other), elsewhere, granted), cwd=str(work))
    found = read_json(os.path.join(daemon.home, "jobs", job_id, "probe.json"), what="the probe")
    # No terminal from the keeper: its socket is not there at all.
    assert found["keeper"]["ok"] is False, found["keeper"]
    assert found["other job"]["ok"] is False, found["other job"]
    # A write outside what it may write fails as the kernel says.
    assert (found["outside"]["ok"], found["outside"]["errno"]) == (False, "EROFS"), found["outside"]
    assert not os.listdir(elsewhere)
    for place in ("cwd", "tmp", "granted"):
        assert found[place]["ok"] is True, (place, found[place])
    # Its own ports and temp: the first range went to the job before it.
    assert row(daemon, other)["sandboxed"] is True and row(daemon, job_id)["sandboxed"] is True
    assert found["port"] == "41020" and found["ports"] == "41020-41039", found
    assert found["tmpdir"] == "/tmp"
    # Its own processes only: its jail's pid 1, its program, nothing of the daemon's.
    assert max(found["pids"]) < 100 and daemon.process.pid not in found["pids"]


# A job kills what started it and leaves a process of its own session behind, which then
# dispatches as the person would (without the job's identity in its environment, as an
# attacker would leave it out).
LEAVER = ("(setsid sh -c 'sleep 1; env -u ROOST_JOB_ID -u PI_JOB_ID roost run --name escaped -- true "
          "> escaped.txt 2>&1; echo \"status $?\" >> escaped.txt; exec sleep 300' &); kill -9 $PPID; sleep 300")


def test_a_process_a_jailed_job_leaves_behind_is_not_the_person_and_ends_with_it(daemon, tmp_path):
    out = tmp_path / "escaped.txt"
    keeper = keeper_pid(daemon.home)
    job_id = dispatch(daemon, ["sh", "-c", LEAVER], cwd=str(tmp_path), name="leaver")
    wait_for(lambda: "status" in (out.read_text() if out.exists() else ""), timeout=30, what="the left-behind try")
    text = out.read_text()
    assert "status 1" in text and f"a process of job {job_id} (leaver)" in text, text
    assert alive(keeper), "the jail could signal the keeper"
    names = [item["name"] for item in daemon.call("list", all=True)["jobs"]]
    assert "escaped" not in names
    left = job_processes(job_id)
    assert len(left) >= 5     # the jail's shell and bwrap, its pid 1, the job's sh and sleep, the one left
    # Its first process ends: every process it left behind ends with it.
    daemon.call("keys", id=job_id, keys=["C-c"])
    wait_state(daemon, job_id, "failed", "done", "stopped")
    wait_for(lambda: not [pid for pid in left if alive(pid)], timeout=10, what="what it left behind to end")


def test_a_process_an_unjailed_job_leaves_behind_when_it_kills_the_keeper_is_not_the_person(daemon, tmp_path):
    out = tmp_path / "escaped.txt"
    keeper = keeper_pid(daemon.home)
    job_id = dispatch(daemon, ["sh", "-c", LEAVER], cwd=str(tmp_path), name="leaver", sandbox=False)
    wait_for(lambda: not alive(keeper), what="the job to kill the keeper")
    wait_for(lambda: "status" in (out.read_text() if out.exists() else ""), timeout=30, what="the left-behind try")
    text = out.read_text()
    assert "status 1" in text and "left behind when roost's keeper died" in text, text
    names = [item["name"] for item in daemon.call("list", all=True)["jobs"]]
    assert "escaped" not in names
    # Said once in the feed, and by `roost doctor` while what it left runs.
    events = [event for event in daemon.call("events", limit=1000)["events"] if event["kind"] == "keeper"]
    assert len(events) == 1 and events[0]["lost"] is True, events
    checks = {check["check"]: check for check in daemon.call("doctor")["roost"]}
    assert checks["keeper deaths"]["verdict"] == "problem", checks.get("keeper deaths")
    assert row(daemon, job_id)["sandboxed"] is False
    for pid in job_processes(job_id):
        os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("jailed", [True, False])
def test_a_job_that_reads_another_jobs_token_cannot_speak_for_it(daemon, tmp_path, jailed):
    victim = dispatch(daemon, ["sleep", "300"], name="concierge-like")
    leaked = tmp_path / "leaked"
    leaked.write_text(job_token(daemon.home, victim))     # however it got it
    answer = tmp_path / "answer.json"
    extra = {} if jailed else {"sandbox": False}
    dispatch(daemon, [PYTHON, "-c", SPEAK_FOR, victim, str(leaked), str(answer)], cwd=str(tmp_path), name="thief",
             **extra)
    said = read_json(str(answer), what="the thief's try")
    assert (said["ok"], said.get("code")) == (False, "unauthorized"), said
    assert "counts only from its own job" in said["error"]
    # The person (this test, outside every job) still may.
    with daemon.client() as client:
        assert client.call("speak_for", {"id": victim, "token": job_token(daemon.home, victim)})["id"] == victim


def test_tokens_are_kept_apart_and_an_earlier_jobs_token_moves_there_on_start(daemon):
    job_id = dispatch(daemon, ["sleep", "300"])
    token = job_token(daemon.home, job_id)
    assert "token" not in job_record(daemon.home, job_id)
    daemon.call("shutdown", keepWorkers=True)
    daemon.process.wait(15)
    # As a daemon before issue 26 left it: the token in job.json, no record apart.
    path = os.path.join(daemon.home, "jobs", job_id, "job.json")
    record = job_record(daemon.home, job_id)
    record["token"] = token
    with open(path, "w") as handle:
        json.dump(record, handle)
    os.unlink(os.path.join(daemon.home, "private", f"{job_id}.json"))
    record.pop("sandboxed")
    with open(path, "w") as handle:
        json.dump(record, handle)
    daemon.start()
    assert "token" not in job_record(daemon.home, job_id)
    # Adopted as it runs, and said to run without a jail (it was started before them).
    assert row(daemon, job_id)["sandboxed"] is False
    assert job_token(daemon.home, job_id) == token
    with daemon.client() as client:
        assert client.call("speak_for", {"id": job_id, "token": token})["id"] == job_id


def test_what_a_job_writes_in_its_job_json_does_not_make_it_the_person(daemon):
    job_id = dispatch(daemon, ["sleep", "300"])
    daemon.call("shutdown", keepWorkers=True)
    daemon.process.wait(15)
    path = os.path.join(daemon.home, "jobs", job_id, "job.json")
    record = job_record(daemon.home, job_id)
    record["launch"].update(person=True, sandbox=False)
    record.update(person=True, cwd="/")
    with open(path, "w") as handle:
        json.dump(record, handle)
    daemon.start()
    shown = row(daemon, job_id)
    assert "person" not in shown and shown["cwd"] == "/tmp"
    assert job_record(daemon.home, job_id)["launch"].get("sandbox") is not False


def test_a_jailed_programs_exit_status_is_its_own(daemon):
    killed = dispatch(daemon, ["sh", "-c", "kill -SEGV $$"])
    exited = dispatch(daemon, ["sh", "-c", "exit 3"])
    interrupted = dispatch(daemon, ["sh", "-c", "echo ready; exec sleep 300"])
    wait_row(daemon, interrupted, lambda current: current["summary"] == "ready")     # the program runs
    daemon.call("keys", id=interrupted, keys=["C-c"])     # through its pty: the terminal's SIGINT
    assert wait_state(daemon, killed, "failed")["error"] == "killed by SIGSEGV (11)"
    assert wait_state(daemon, exited, "failed")["error"] == "exited with status 3"
    assert wait_state(daemon, interrupted, "failed")["error"] == "killed by SIGINT (2)"
    assert job_record(daemon.home, killed)["exit"]["signal"] == 11


def test_a_stop_reaches_the_jailed_program_and_leaves_nothing(daemon, tmp_path):
    script = "trap 'echo got TERM > stopped.txt; exit 0' TERM; sleep 300 & wait"
    job_id = dispatch(daemon, ["sh", "-c", script], cwd=str(tmp_path))
    # The sleep is there once the trap is set (the script sets it first): the outer shell,
    # bwrap, its pid 1, the script and its sleep.
    wait_for(lambda: len(job_processes(job_id)) >= 5, what="the job's processes, its sleep among them")
    left = job_processes(job_id)
    daemon.call("stop", id=job_id)
    assert row(daemon, job_id)["state"] == "stopped"
    assert (tmp_path / "stopped.txt").read_text() == "got TERM\n"
    wait_for(lambda: not [pid for pid in left if alive(pid)], what="every process of the jail to end")


def test_a_write_its_jail_refused_is_named_when_the_job_ends(daemon, tmp_path):
    job_id = dispatch(daemon, ["sh", "-c", "echo made > /usr/roost-jail-test; exit 1"], cwd=str(tmp_path))
    error = wait_state(daemon, job_id, "failed")["error"]
    assert error.startswith("exited with status 1; its output ends with \"Read-only file system\"") and \
        "sandbox.write" in error, error
    assert "Read-only file system" in output(daemon.home, job_id)
    assert "sandbox.write" in daemon.call("explain", id=job_id)["text"]
    # The row is shown before its change reaches the timeline (written meanwhile).
    wait_for(lambda: any("sandbox.write" in (entry.get("error") or "") for entry in
                         daemon.call("timeline", id=job_id)["entries"] if entry["kind"] == "state"),
             what="the timeline's entry of the end")


def test_what_runs_without_a_jail_says_so(daemon, tmp_path):
    write_config(daemon.home, {"agentProfiles": {"loose": {"command": ["sleep", "300"], "sandbox": False}}})
    asked = dispatch(daemon, ["sleep", "300"], sandbox=False)
    by_profile = dispatch(daemon, [], profile="loose")
    jailed = dispatch(daemon, ["sleep", "300"])
    assert [row(daemon, job)["sandboxed"] for job in (asked, by_profile, jailed)] == [False, False, True]
    done = daemon.cli("run", "--as-me", "--json", "--", "sleep", "300")
    as_me = json.loads(done.stdout)["id"]
    assert row(daemon, as_me)["sandboxed"] is False
    listed = daemon.cli("list").stdout.decode()
    assert [line for line in listed.splitlines() if asked in line][0].endswith("[no jail]")
    assert "[no jail]" not in [line for line in listed.splitlines() if jailed in line][0]
    checks = {check["check"]: check for check in daemon.call("doctor")["roost"]}
    assert checks["jail"]["verdict"] == "ok" and asked in checks["jail"]["text"], checks["jail"]
    write_config(daemon.home, {"sandbox": False})
    checks = {check["check"]: check for check in daemon.call("doctor")["roost"]}
    assert checks["jail"]["verdict"] == "off" and "can read and write all your files" in checks["jail"]["text"]
    assert row(daemon, dispatch(daemon, ["sleep", "300"]))["sandboxed"] is False


def test_a_jailed_sessions_spawn_stays_in_its_folder_and_in_a_jail(daemon, tmp_path):
    parent = dispatch(daemon, ["sleep", "300"], cwd=str(tmp_path), name="parent")
    launch = {"kind": "shell", "command": ["sleep", "300"], "env": {}, "name": "child", "sessionFile": "",
              "origin": "bg"}
    (tmp_path / "home").symlink_to(os.path.expanduser("~"))
    with daemon.client() as client:
        client.call("speak_for", {"id": parent, "token": job_token(daemon.home, parent)})
        for cwd in ("/", str(tmp_path / "home")):
            refused = client.request("spawn", {"launch": dict(launch, cwd=cwd)})
            assert refused["code"] == "unauthorized", refused
        refused = client.request("spawn", {"launch": dict(launch, cwd=str(tmp_path), sandbox=False)})
        assert refused["code"] == "unauthorized", refused
        child = client.call("spawn", {"launch": dict(launch, cwd=str(tmp_path))})["id"]
    assert row(daemon, child)["sandboxed"] is True


def test_doctor_says_how_to_keep_a_file_an_agent_replaces_beside_itself(daemon, tmp_path):
    (tmp_path / "state").mkdir()
    (tmp_path / "mine.json").write_text("{}")
    write_config(daemon.home, {"agentProfiles": {"mine": {"command": ["sleep", "1"],
                                                          "sandbox": {"write": ["~/state/", "~/mine.json"]}}}})
    checks = {check["name"]: check for check in daemon.call("doctor", env={"HOME": str(tmp_path)})["profiles"]}
    said = " ".join(checks["mine"]["notes"])
    assert "~/mine.json is a file in a folder its jail does not write" in said, said
    assert "mv ~/mine.json ~/state/mine.json && ln -s state/mine.json ~/mine.json" in said, said


REGISTER_AND_SPAWN = (
    "import json, os, socket, sys; s = socket.socket(socket.AF_UNIX); s.connect(os.environ['ROOST_SOCKET']); "
    "f = s.makefile(); call = lambda n, op, args: (s.sendall(json.dumps({'id': n, 'op': op, 'args': args}).encode() "
    "+ b'\\n'), json.loads(f.readline()))[1]; "
    "call(1, 'peer_register', {'name': 'outsider', 'cwd': '/', 'pid': os.getpid()}); "
    "answer = call(2, 'spawn', {'launch': {'kind': 'shell', 'cwd': '/', 'command': ['sleep', '300'], 'env': {}, "
    "'name': 'escaped', 'sessionFile': '', 'origin': 'bg'}}); open(sys.argv[1], 'w').write(json.dumps(answer))")


def test_a_jailed_process_that_registers_as_a_peer_still_spawns_only_in_its_folder(daemon, tmp_path):
    answer = tmp_path / "answer.json"
    dispatch(daemon, [PYTHON, "-c", REGISTER_AND_SPAWN, str(answer)], cwd=str(tmp_path))
    said = read_json(str(answer), what="the spawn's answer")
    assert (said["ok"], said.get("code")) == (False, "unauthorized"), said
    assert "escaped" not in [item["name"] for item in daemon.call("list", all=True)["jobs"]]


# Saves ~/cfg.json as Claude Code saves ~/.claude.json: where its link leads, by a
# temporary file beside it and a rename.
SAVER = ("import json, os, sys; path = os.path.realpath(os.path.expanduser('~/cfg.json')); "
         "open(path + '.tmp', 'w').write(json.dumps({'saved': sys.argv[1]})); os.rename(path + '.tmp', path); "
         "print('saved', flush=True)")


def test_a_file_saved_by_a_rename_beside_it_is_moved_where_its_jail_may_save_it(daemon, tmp_path, outside):
    home = os.path.join(outside, "home")
    os.makedirs(os.path.join(home, ".saver"))
    with open(os.path.join(home, "cfg.json"), "w") as handle:
        handle.write('{"saved": "before"}')
    write_config(daemon.home, {"agentProfiles": {"saver": {
        "command": [PYTHON, "-c", SAVER, "in the jail"],
        "sandbox": {"write": ["~/.saver/"], "moveInto": {"~/cfg.json": "~/.saver/"}}}}})
    job_id = dispatch(daemon, [], profile="saver", cwd=str(tmp_path), env={"HOME": home})
    assert wait_state(daemon, job_id, "done", "failed")["state"] == "done", output(daemon.home, job_id)
    # Its name leads where it now is, and what the jail saved is there.
    assert os.readlink(os.path.join(home, "cfg.json")) == ".saver/cfg.json"
    with open(os.path.join(home, "cfg.json")) as handle:
        assert json.load(handle) == {"saved": "in the jail"}
