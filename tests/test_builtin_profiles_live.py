"""The built-in profiles on a real daemon: `roost run --profile claude TASK` with no
roost.json, a roost.json profile that replaces a built-in one, `roost profiles`,
`roost doctor`, and a row that says when its screen cannot be read. The agents are
stand-ins named like the real ones (tests/agents/replays_screens.py) that draw the
real agents' recorded screens (tests/fixtures/agents/) from the bytes those wrote."""

import json
import os
import subprocess
import stat

from conftest import AGENTS, PYTHON, ROOT, wait_for
from jobkit import job_record, row, wait_row, write_config

RECORDED = os.path.join(ROOT, "tests", "fixtures", "agents")
CLAUDE = os.path.join(RECORDED, "claude-code", "2.1.197")


def program(folder, name, body):
    """An executable `name` in `folder` running the shell `body`."""
    path = os.path.join(folder, name)
    with open(path, "w") as handle:
        handle.write("#!/bin/sh\n" + body + "\n")
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
    return path


class StandIn:
    """A folder with a stand-in `claude` that draws the recordings `labels`, in order."""

    def __init__(self, tmp_path, *labels, name="claude", folder=CLAUDE):
        self.bin = tmp_path / "bin"
        self.bin.mkdir(exist_ok=True)
        self.log = tmp_path / f"{name}.log"
        screens = ":".join(os.path.join(folder, f"{label}.output.bin") for label in labels)
        program(str(self.bin), name, f"REPLAY_SCREENS='{screens}' REPLAY_LOG='{self.log}' "
                                     f"exec {PYTHON} {os.path.join(AGENTS, 'replays_screens.py')} \"$@\"")
        self.env = {"PATH": f"{self.bin}:{os.environ['PATH']}"}

    def events(self):
        try:
            return [json.loads(line) for line in self.log.read_text().splitlines()]
        except FileNotFoundError:
            return []

    def typed(self):
        return [event["typed"] for event in self.events() if "typed" in event]


def run(daemon, tmp_path, env, *argv):
    done = daemon.cli("run", "--json", "--cwd", str(tmp_path), *argv, env=env)
    assert done.returncode == 0, done.stderr.decode()
    return json.loads(done.stdout)["id"]


def test_run_with_a_built_in_profile_needs_no_roost_json(daemon, tmp_path):
    claude = StandIn(tmp_path, "trust-dialog", "first-prompt", "answered")
    assert not os.path.exists(os.path.join(daemon.home, "roost.json"))
    job_id = run(daemon, tmp_path, claude.env, "--profile", "claude", "fix the test")
    # The task goes in claude's argv; the trust dialog comes first and reads as one.
    wait_for(lambda: claude.events(), what="the stand-in to start")
    # Before the task: roost's MCP server for Claude Code, and its tools allowed.
    mcp_config, allowed, settings_flag, settings, session_flag, session, dashes, task = claude.events()[0]["argv"]
    assert (dashes, task) == ("--", "fix the test") and allowed.startswith("--allowedTools=mcp__roost__roost_peers,")
    # issue 29: its status line roost's, which records the plan windows and shows the user's own
    assert settings_flag == "--settings"
    assert json.loads(settings)["statusLine"]["command"] == "roost statusline claude"
    # Its own conversation id (issue 19), the one its resume names.
    launch = job_record(daemon.home, job_id)["launch"]
    assert (session_flag, session) == ("--session-id", launch["sessionId"])
    assert launch["resumeCommand"][-2:] == ["--resume", session]
    server = json.loads(mcp_config.removeprefix("--mcp-config="))["mcpServers"]["roost"]
    assert server["args"][-1] == "mcp"
    ran = subprocess.run([server["command"], *server["args"][:-1], "--version"], capture_output=True, timeout=30,
                         env={**os.environ, **server.get("env", {})}, cwd="/")
    assert ran.stdout.startswith(b"roost "), ran.stderr
    current = wait_row(daemon, job_id, lambda current: current["waitingFor"] == "dialog", timeout=15,
                       what="the trust dialog on the row")
    assert current["name"] == "claude" and current["profile"] == "claude"
    assert current["question"] == "Quick safety check: Is this a project you created or one you trust?"
    assert current["choices"] == ["Yes, I trust this folder", "No, exit"]
    # The user answers it; then the prompt reads as waiting.
    assert daemon.cli("keys", job_id, "1", "Enter").returncode == 0
    wait_row(daemon, job_id, lambda current: current["status"] == "waiting" and current["waitingFor"] == "question",
             timeout=15, what="claude's prompt waiting")
    assert claude.typed() == ["1"]
    record = daemon.call("list", all=True)["jobs"]
    assert [item["id"] for item in record] == [job_id]


def test_a_roost_json_profile_replaces_the_built_in_one(daemon, tmp_path):
    mine = StandIn(tmp_path, "seeded-first-prompt", name="my-claude")
    write_config(daemon.home, {"agentProfiles": {"claude": {"command": ["my-claude", "--mine"], "task": "argv"}}})
    listed = json.loads(daemon.cli("profiles", "--json").stdout)
    by_name = {entry["name"]: entry for entry in listed["profiles"]}
    assert by_name["claude"]["source"] == os.path.join(daemon.home, "roost.json")
    assert by_name["claude"]["replaces"] == "built-in" and by_name["claude"]["command"] == ["my-claude", "--mine"]
    run(daemon, tmp_path, mine.env, "--profile", "claude", "the task")
    wait_for(lambda: mine.events(), what="roost.json's program to start")
    assert mine.events()[0] == {"argv": ["--mine", "--", "the task"]}


def test_profiles_lists_the_built_in_ones_and_roost_jsons(daemon):
    write_config(daemon.home, {"agentProfiles": {"mine": {"command": ["python3", "x.py"], "protocol": True}}})
    done = daemon.cli("profiles", "--json")
    assert done.returncode == 0, done.stderr
    listed = {entry["name"]: entry for entry in json.loads(done.stdout)["profiles"]}
    assert set(listed) == {"aider", "claude", "codex", "mine", "pi"}
    assert {listed[name]["source"] for name in ("aider", "claude", "codex", "pi")} == {"built-in"}
    assert listed["mine"]["source"] == os.path.join(daemon.home, "roost.json") and "replaces" not in listed["mine"]
    assert listed["claude"]["recordedOn"] and listed["claude"]["versionCommand"] == ["claude", "--version"]
    # pi runs with roost's own extension, shipped with roost beside the client it imports.
    pi = listed["pi"]
    assert pi["protocol"] is True and pi["command"][:2] == ["pi", "-e"]
    extension = pi["command"][2]
    assert os.path.isfile(extension) and extension.endswith(os.path.join("pi", "roost.ts"))
    assert os.path.isfile(os.path.join(os.path.dirname(extension), "..", "src", "roost-agent.ts"))
    text = daemon.cli("profiles").stdout.decode()
    assert "claude  claude [roost mcp] [roost statusline] --session-id {sessionId} (task argv; recorded on 2.1.197)" in text \
        and "from built-in" in text


def test_doctor_says_which_agents_are_found_and_tested_at_their_version(daemon, tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    program(str(bin_dir), "claude", 'echo "2.1.197 (Claude Code)"')
    program(str(bin_dir), "codex", 'echo "codex-cli 0.999.0"')
    program(str(bin_dir), "pi", 'echo "0.73.1" >&2')      # pi prints its version on stderr
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin"}           # no aider on it
    done = daemon.cli("doctor", "--json", env=env)
    assert done.returncode == 0, done.stderr
    checks = {check["name"]: check for check in json.loads(done.stdout)["profiles"]}
    assert checks["claude"]["verdict"] == "ok" and checks["claude"]["version"] == "2.1.197"
    assert checks["claude"]["path"] == str(bin_dir / "claude") and checks["claude"]["notes"] == []
    assert checks["pi"]["verdict"] == "ok" and checks["pi"]["version"] == "0.73.1"
    assert checks["codex"]["verdict"] == "untested" and checks["codex"]["version"] == "0.999.0"
    assert "recorded on 0.171.0" in checks["codex"]["notes"][0]
    assert checks["aider"]["verdict"] == "not-found" and "aider is not on PATH" in checks["aider"]["notes"][0]
    text = daemon.cli("doctor", env=env).stdout.decode()
    assert "codex   UNTESTED 0.999.0 at" in text and "aider   not found" in text


def test_doctor_on_a_roost_json_profile(daemon, tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    program(str(bin_dir), "claude", "echo oops >&2; exit 3")
    write_config(daemon.home, {"agentProfiles": {
        "claude": {"command": ["claude"], "versionCommand": ["claude", "--version"], "recordedOn": ["1.0.0"]},
        "bad": {"command": ["claude"], "term": {"waiting": "(unclosed"}},
        "plain": {"command": ["claude"]}}})
    done = daemon.cli("doctor", "--json", env={"PATH": f"{bin_dir}:/usr/bin:/bin"})
    checks = {check["name"]: check for check in json.loads(done.stdout)["profiles"]}
    assert checks["claude"]["verdict"] == "no-version"
    assert any("replaces the built-in one" in note for note in checks["claude"]["notes"])
    assert any("exit status 3" in note and "oops" in note for note in checks["claude"]["notes"])
    assert checks["bad"]["verdict"] == "broken" and "not a regular expression" in checks["bad"]["notes"][0]
    assert checks["plain"]["verdict"] == "unchecked"


def test_a_screen_no_pattern_reads_says_so_in_its_row_once_that_lasts(daemon, tmp_path):
    # Claude Code's screen when it cannot start offline: none of the profile's patterns.
    claude = StandIn(tmp_path, "onboarding-offline", "seeded-first-prompt")
    write_config(daemon.home, {"unreadAfterMs": 300})
    job_id = run(daemon, tmp_path, claude.env, "--profile", "claude")
    current = wait_row(daemon, job_id, lambda current: current.get("unreadSince"), timeout=15,
                       what="the row to say its screen is unread")
    assert (current["state"], current["status"]) == ("blocked", None)
    assert current["unreadSince"] <= current["stateSince"] + 5000
    listed = daemon.cli("list").stdout.decode()
    assert "unread" in listed
    # Once it reads again (the prompt), the row says nothing of it any more.
    assert daemon.cli("keys", job_id, "Enter").returncode == 0
    current = wait_row(daemon, job_id, lambda current: current["status"] == "waiting", timeout=15,
                       what="the prompt read")
    assert "unreadSince" not in current
    assert row(daemon, job_id).get("unreadSince") is None


def test_a_profile_copied_from_profiles_json_reads_the_dialog_as_the_built_in_one_does(daemon, tmp_path):
    """Issue 18: `profiles --json` gives each profile whole (its term block, its command
    as written); a copy in roost.json reads aider's "create a git repo?" as a dialog."""
    listed = json.loads(daemon.cli("profiles", "--json").stdout)
    aider = {entry["name"]: entry for entry in listed["profiles"]}["aider"]["profile"]
    # As written: the job's own directory is filled in when it starts.
    assert aider["term"]["dialog"]
    assert aider["command"] == ["aider", "--chat-history-file", "{jobDir}/aider.chat.history.md",
                                "--analytics-log", "{jobDir}/aider.analytics.jsonl"]
    pi = {entry["name"]: entry for entry in listed["profiles"]}["pi"]["profile"]
    assert any(word.startswith("{bundle}/") for word in pi["command"])   # as written, not expanded
    write_config(daemon.home, {"agentProfiles": {"my-aider": aider}})
    seen = {}
    for profile in ("aider", "my-aider"):
        folder = tmp_path / profile
        folder.mkdir()
        stand_in = StandIn(folder, "no-git-dialog", name="aider", folder=os.path.join(RECORDED, "aider", "0.86.2"))
        job_id = run(daemon, folder, stand_in.env, "--profile", profile, "the task")
        current = wait_row(daemon, job_id, lambda current: current["waitingFor"] == "dialog", timeout=15,
                           what=f"{profile}'s dialog on the row")
        seen[profile] = (current["status"], current["question"], current["choices"])
        assert stand_in.typed() == []     # the task is not typed into the dialog
    assert seen["my-aider"] == seen["aider"]
    assert seen["aider"][1].startswith("No git repo found, create one")
