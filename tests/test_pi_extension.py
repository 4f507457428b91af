"""pi through the protocol: the real pi, with clients/typescript/pi/roost.ts, as a roost
job against a fake model, offline. Its row follows pi's own events (working, waiting, a
dialog), replies reach the model (steer and follow-up each as pi takes them), a dialog is
answered by a reply, and pi's screen is there to see. pi's model has roost's tools (those of
`roost mcp`): it messages a real peer, watches one, works the board, and a refusal is its
tool's error; what peers send reaches the model as input in roost's envelope, never as a
dialog's answer.

Needs pi (`@mariozechner/pi-coding-agent`, pinned at 0.73.1) installed: ROOST_TEST_PI
names its `pi`, else /tmp/realagents/pi/node_modules/.bin/pi (where the real agents'
install puts it). Skipped without it; CI does not install pi. The fake model is
`fake_llm.py` of the real agents' kit: ROOST_TEST_FAKE_LLM, else ../shared/realagents/;
tests/tool_llm.py around it makes it call a tool by name (`call: NAME {JSON}`).
"""

import glob
import json
import os
import subprocess
import time

import pytest

from conftest import ROOT, wait_for
from peerkit import book, items_agent, messages
from pikit import FAKE_LLM, PI, jail_grants, model, offline_world, pytestmark, reported, serve, user_texts  # noqa: F401 (a fixture, the marker)
from protokit import ProtoJob, ended
from roost.mcp_server.tools import INSTRUCTIONS, tools_for
from roost.term.screen.screen import Screen

EXTENSION = os.path.join(ROOT, "clients", "typescript", "pi", "roost.ts")
TOOL_LLM = os.path.join(ROOT, "tests", "tool_llm.py")


def permission_gate():
    """pi's own example of an extension dialog (a select before `rm -rf`)."""
    return os.path.join(os.path.dirname(os.path.realpath(PI)), "..", "examples", "extensions", "permission-gate.ts")


@pytest.fixture
def tool_model(tmp_path):
    """The fake model that also calls a named tool (`call: NAME {JSON}`, tests/tool_llm.py)."""
    process, fake = serve(tmp_path, TOOL_LLM, FAKE_LLM)
    yield fake
    process.kill()
    process.wait(5)


def start_pi(daemon, tmp_path, model, task, *extra, session=False):
    """pi as a job (named pi) on its task; `session`: pi keeps its session file (in its
    agent directory, see pi_session), else --no-session."""
    env, work = offline_world(tmp_path, model.port)
    # Whatever the test's own environment carries for another model or pi is not this run's.
    clear = [name for name in os.environ if name.startswith(("ANTHROPIC_", "OPENAI_", "CLAUDE", "CODEX_", "PI_"))]
    env.update({name: "" for name in clear if name not in env})
    profile = {"command": [PI, *([] if session else ["--no-session"]), "-e", EXTENSION, *extra],
               "task": "type", "protocol": True, "sandbox": jail_grants(tmp_path)}
    config = os.path.join(daemon.home, "roost.json")
    try:
        with open(config, encoding="utf-8") as handle:
            profiles = json.load(handle).get("agentProfiles") or {}
    except FileNotFoundError:
        profiles = {}     # the profiles of the other jobs a test started are kept
    with open(config, "w", encoding="utf-8") as handle:
        json.dump({"agentProfiles": {**profiles, "pi": profile}}, handle)
    launch = {"kind": "shell", "cwd": work, "sessionFile": "", "command": [], "env": env, "name": "pi",
              "origin": "dispatch", "profile": "pi", "task": task}
    return ProtoJob(daemon, daemon.call("dispatch", **launch)["id"])


def drawn(job):
    """The screen pi drew on the job's terminal (its output log, through roost's screen)."""
    with open(os.path.join(job.dir, "output.log"), "rb") as handle:
        raw = handle.read()
    screen = Screen(40, 120)
    screen.feed(raw)
    return screen.text(None)


def test_pi_reports_its_state_and_takes_replies(daemon, tmp_path, model):
    job = start_pi(daemon, tmp_path, model, "delay=3 echo: the first task")
    row = job.wait_row(lambda row: reported(row) and row["state"] == "working", "pi working on its task", timeout=60)
    assert "the first task" in (row["summary"] or "")
    assert set(row["capabilities"]) >= {"report", "replies", "steer"}
    row = job.wait_row(lambda row: row["state"] == "blocked" and row["summary"] == "ECHO: the first task",
                       "pi waiting after its answer", timeout=60)
    # One vocabulary (issue 19): after an answer that asks nothing, pi waits for the user's
    # text as the screen-read agents do.
    assert row["waitingFor"] == "question" and row["question"] is None and row["model"] == "fake/fake-model"
    assert row.get("queued", 0) == 0
    assert user_texts(model)[0].strip() == "delay=3 echo: the first task"
    # pi's own screen, as it drew it on the job's terminal, is there to see (and to attach to).
    wait_for(lambda: "ECHO: the first task" in drawn(job), timeout=15, what="pi to draw the answer")
    assert "pi v0.73" in daemon.call("peek", id=job.id)["text"]

    job.reply("echo: a reply from roost")
    job.wait_row(lambda row: row["summary"] == "ECHO: a reply from roost", "the reply answered", timeout=60)
    assert user_texts(model)[-1].strip() == "echo: a reply from roost"
    # An answer that asks something: the row says so.
    job.reply("echo: Shall I go on?")
    row = job.wait_row(lambda row: row["question"] == "ECHO: Shall I go on?", "the question", timeout=60)
    assert row["question"] == "ECHO: Shall I go on?" and row["state"] == "blocked"


def test_the_extension_type_checks_against_pis_own_types(tmp_path):
    package = os.path.join(ROOT, "clients", "typescript")
    tsc = os.path.join(package, "node_modules", ".bin", "tsc")
    pi_types = os.path.join(os.path.dirname(os.path.realpath(PI)), "index.d.ts")
    config = {
        "extends": os.path.join(package, "tsconfig.json"),
        "compilerOptions": {"noEmit": True, "allowImportingTsExtensions": True,
                            "typeRoots": [os.path.join(package, "node_modules", "@types")],
                            "paths": {"@mariozechner/pi-coding-agent": [pi_types]}},
        "include": [EXTENSION],
    }
    (tmp_path / "tsconfig.json").write_text(json.dumps(config))
    checked = subprocess.run([tsc, "-p", str(tmp_path / "tsconfig.json")], capture_output=True, text=True, timeout=180)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_replies_waiting_for_pi_reach_the_model_each_in_order(daemon, tmp_path, model):
    # The task and a reply wait for pi to connect; then both come at once, to an idle pi.
    job = start_pi(daemon, tmp_path, model, "echo: one")
    job.reply("echo: two")
    job.wait_row(lambda row: row["summary"] == "ECHO: two" and row.get("queued", 0) == 0, "both answered", timeout=60)
    assert [text.strip() for text in user_texts(model)] == ["echo: one", "echo: two"]


def test_a_steer_joins_the_run_and_a_follow_up_waits_for_it(daemon, tmp_path, model):
    job = start_pi(daemon, tmp_path, model, "run: sleep 3")
    job.wait_row(lambda row: reported(row) and row["state"] == "working" and row["summary"] == "bash: sleep 3", "pi running its tool", timeout=60)
    job.reply("echo: later", mode="followUp")
    job.reply("echo: steered", mode="steer")
    job.wait_row(lambda row: row["state"] == "blocked" and row["summary"] == "ECHO: later",
                 "pi done with both", timeout=60)
    requests = model.requests()
    # The steer went into the run under way, after the tool's result (the request that
    # carries it ends with it); the follow-up waited for that run to end.
    assert [request["user"].strip() for request in requests] == ["run: sleep 3", "echo: steered", "echo: later"]
    assert [request["tool_result"] for request in requests] == [False, False, False]


def test_a_dialog_is_reported_and_answered_by_a_reply(daemon, tmp_path, model):
    job = start_pi(daemon, tmp_path, model, "run: rm -rf ./junk", "-e", permission_gate())
    junk = os.path.join(str(tmp_path), "work", "junk")
    os.mkdir(junk)
    row = job.wait_row(lambda row: row["waitingFor"] == "dialog", "the permission dialog", timeout=60)
    assert row["state"] == "blocked" and row["choices"] == ["Yes", "No"]
    assert "rm -rf ./junk" in row["question"]
    job.reply("maybe")
    job.wait_row(lambda row: "not one of the choices" in (row["summary"] or ""), "the answer refused", timeout=30)
    assert row["waitingFor"] == "dialog"
    job.reply("2")   # No
    job.wait_row(lambda row: row["state"] == "blocked" and row["summary"] == "Ran it. FAKE-REPLY-OK",
                 "pi done after the answer", timeout=60)
    assert os.path.isdir(junk)   # the gate blocked the command: the answer was No
    assert model.requests()[-1]["tool_result"] is True
    wait_for(lambda: "Blocked by user" in drawn(job), timeout=15, what="pi to draw the refusal")
    job.wait_row(lambda row: row.get("queued", 0) == 0, "both replies acked")


def test_stopping_pi_ends_the_job(daemon, tmp_path, model):
    job = start_pi(daemon, tmp_path, model, "echo: hi")
    job.wait_row(lambda row: row["summary"] == "ECHO: hi", "the answer", timeout=60)
    daemon.call("stop", id=job.id)
    job.wait_row(ended, "pi to end", timeout=30)


# ---------------------------------------------------------------------------- roost's tools

def roost_requests(model):
    """The requests that carry a roost tool's result."""
    return [request for request in model.requests() if request.get("toolResult") is not None]


def pi_session(tmp_path):
    """The entries of the session file pi kept (start_pi(..., session=True))."""
    found = glob.glob(str(tmp_path / "pihome" / ".pi" / "agent" / "sessions" / "**" / "*.jsonl"), recursive=True)
    assert len(found) == 1, found
    with open(found[0], encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def tool_results(tmp_path):
    """pi's own record of each tool's result: (tool, isError, text)."""
    return [(entry["message"]["toolName"], entry["message"]["isError"], text_of_message(entry["message"]))
            for entry in pi_session(tmp_path)
            if entry.get("type") == "message" and entry["message"].get("role") == "toolResult"]


def text_of_message(message):
    return "\n".join(part.get("text", "") for part in message.get("content") or [] if part.get("type") == "text")


def answered(text):
    return lambda row: row["state"] == "blocked" and row["summary"] == text


def test_pis_model_gets_roosts_tools_and_messages_a_peer_that_answers(daemon, tmp_path, tool_model):
    helper = items_agent(daemon, "helper")
    job = start_pi(daemon, tmp_path, tool_model, 'call: roost_send {"to": "helper", "message": "the patch is ready"}')
    job.wait_row(answered("RESULT: Delivered to helper."), "pi's model sent the message", timeout=60)
    # The model was offered roost mcp's tools, as roost mcp describes them.
    first = tool_model.requests()[0]
    for tool in tools_for():
        assert first["toolSpecs"][tool.name] == {"description": tool.description, "parameters": tool.schema}
    assert INSTRUCTIONS in first["system"]    # and told, as roost mcp's instructions tell it, who is who
    [message] = wait_for(lambda: messages(helper), what="the message at the helper")
    assert message["from"] == "pi" and message["kind"] == "message"
    assert message["text"].startswith('[roost: a message from the session "pi"')
    assert "not from the user" in message["text"]
    assert message["text"].endswith("\n> the patch is ready")

    # pi is a peer now: the helper's answer reaches pi's model as its input, in roost's envelope.
    assert "agent-items" in job.row()["capabilities"]
    helper.reply('op send 10 {"to": "pi", "message": "echo: thanks, merging it"}')
    job.wait_row(answered("ECHO: thanks, merging it"), "pi's model answered the helper's message", timeout=60)
    envelope = tool_model.users()[-1]
    assert envelope.startswith('[roost: a message from the session "helper"') and "not from the user" in envelope
    sent = wait_for(lambda: [entry["call"] for entry in helper.handled() if "call" in entry], what="the helper's send")
    assert sent[-1]["result"]["outcome"] == "delivered"
    # pi shows it as roost's, not as its user's.
    wait_for(lambda: "echo: thanks, merging it" in drawn(job), timeout=15, what="pi to show the message")
    assert "[roost]" in drawn(job)
    wait_for(lambda: book(job.dir) == [], what="the message acked")


def test_a_watch_tells_pis_model_when_the_peer_ends(daemon, tmp_path, tool_model):
    helper = items_agent(daemon, "helper")
    job = start_pi(daemon, tmp_path, tool_model, 'call: roost_watch {"id": "helper", "when": "ended"}')
    job.wait_row(answered("RESULT: Watching helper: a notice reaches you once it is ended."), "the watch", timeout=60)
    daemon.call("stop", id=helper.id)
    wait_for(lambda: any((user or "").startswith("[roost: a notice, not from the user:") and '"helper"' in user
                         for user in tool_model.users()), timeout=60, what="the notice at pi's model")
    job.wait_row(answered("Hi! I am the fake LLM. FAKE-REPLY-OK"), "pi's model answered the notice", timeout=60)
    wait_for(lambda: book(job.dir) == [], what="the notice acked")


def test_pis_model_lists_claims_and_finishes_a_board_task_and_a_refusal_is_its_tool_error(daemon, tmp_path,
                                                                                        tool_model):
    task = daemon.call("task", action="add", title="write the docs", detail="all of them")["task"]
    job = start_pi(daemon, tmp_path, tool_model, "call: roost_tasks", session=True)
    job.wait_row(answered("RESULT: The board has 1 task."), "pi's model listed the board", timeout=60)
    listed = json.loads(roost_requests(tool_model)[-1]["toolResult"].split("\n", 1)[1])
    assert [(item["id"], item["title"], item["state"]) for item in listed["tasks"]] == [
        (task["id"], "write the docs", "open")]

    job.reply('call: roost_claim {"id": 999999}')
    job.wait_row(lambda row: (row["summary"] or "").startswith("RESULT: roost refused this (not_found)"),
                 "the refusal", timeout=60)
    job.reply(f'call: roost_claim {{"id": {task["id"]}}}')
    job.wait_row(answered(f"RESULT: Claimed #{task['id']}."), "the claim", timeout=60)
    job.reply(f'call: roost_done {{"id": {task["id"]}, "result": "written"}}')
    job.wait_row(answered(f"RESULT: #{task['id']} is done."), "the task done", timeout=60)
    [board] = daemon.call("task", action="list")["tasks"]
    assert (board["state"], board["result"], board["owner"]["name"]) == ("done", "written", "pi")
    # pi's own record: the refusal was the tool's error, naming roost's code; the others were not.
    results = tool_results(tmp_path)
    assert [(tool, error) for tool, error, _ in results] == [
        ("roost_tasks", False), ("roost_claim", True), ("roost_claim", False), ("roost_done", False)]
    assert results[1][2].startswith("roost refused this (not_found): ")


def test_a_peers_message_never_answers_a_dialog(daemon, tmp_path, tool_model):
    helper = items_agent(daemon, "helper")
    job = start_pi(daemon, tmp_path, tool_model, "run: rm -rf ./junk", "-e", permission_gate())
    junk = os.path.join(str(tmp_path), "work", "junk")
    os.mkdir(junk)
    job.wait_row(lambda row: row["waitingFor"] == "dialog", "the permission dialog", timeout=60)
    helper.reply('op send 10 {"to": "pi", "message": "Yes"}')
    sent = wait_for(lambda: [entry["call"] for entry in helper.handled() if "call" in entry], what="the helper's send")
    assert sent[-1]["result"]["outcome"] == "delivered"
    job.reply("2")   # the user's No
    job.wait_row(answered("Hi! I am the fake LLM. FAKE-REPLY-OK"), "pi's model answered the message", timeout=60)
    assert os.path.isdir(junk)   # the user's answer closed the dialog; the peer's Yes came after, as input
    assert tool_model.users()[-1].startswith('[roost: a message from the session "helper"')
    # The fake model logs a user text's first 200 characters: the quoted "Yes" may be cut.
    last_line = tool_model.users()[-1].split("\n")[-1]
    assert len(last_line) >= 3 and "> Yes".startswith(last_line)


def test_pi_that_gave_up_on_the_providers_limit_reports_limit_with_its_reset(daemon, tmp_path, monkeypatch):
    body = {"error": {"type": "requests", "code": "rate_limit_exceeded", "message":
                      "Rate limit reached for fake-model on requests per min (RPM): Limit 3, Used 3, Requested 1. "
                      "Please try again in 20s."}}
    monkeypatch.setenv("FAKE_LLM_FAIL", json.dumps({"status": 429, "body": body}))
    process, model = serve(tmp_path, FAKE_LLM)
    try:
        job = start_pi(daemon, tmp_path, model, "echo: a task into the limit")
        row = job.wait_row(lambda row: reported(row) and row["waitingFor"] == "limit", "pi at the limit", timeout=90)
        assert row["state"] == "blocked" and row["status"] == "waiting"
        assert "try again in 20s" in (row["error"] or "")
        # 20 s after pi gave up, as the message says (it came within a few seconds before the row).
        assert time.time() * 1000 + 10_000 <= row["resetsAt"] <= time.time() * 1000 + 21_000
        listed = daemon.cli("limits", "--json").stdout.decode()
        assert job.id in listed
    finally:
        process.kill()
        process.wait(5)
