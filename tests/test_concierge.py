"""The concierge (M44, M45) against a real daemon: its place (a job with role concierge,
not listed, on/off/status, the name reserved), who may call its ops, the policy the
daemon holds it to (concierge-reply and concierge-act refused until allowed, undo), its
suggestions, and a terminal concierge that uses the CLI from inside its job."""

import json
import os
import sys
import time

import pytest

from conciergekit import Speaker, launch, turn_on
from conftest import wait_for
from jobkit import agent, dispatch, output, row, wait_row, write_config
from protokit import RECORDER, token_of

CONCIERGE_ONLY = ("concierge-say", "concierge-policy", "concierge-suggest", "concierge-reply", "concierge-act")
PERSON_ONLY = ("concierge", "concierge-ask")


@pytest.fixture
def concierge(daemon):
    speaker = Speaker(daemon, turn_on(daemon))
    yield speaker
    speaker.close()


def events(daemon, kind):
    return [event for event in daemon.call("events", limit=1000)["events"] if event["kind"] == kind]


def waiting_question(daemon, choices=("yes", "no")):
    """A protocol job whose row waits for a question (its agent not connected: replies
    to it are kept for it)."""
    job_id = dispatch(daemon, ["sleep", "60"], name="asker", protocol=True)
    with daemon.client() as client:
        client.call("report", {"id": job_id, "token": token_of(daemon, job_id), "report": {
            "state": "blocked", "status": "waiting", "waitingFor": "question", "question": "Go on?",
            "choices": list(choices)}})
    wait_row(daemon, job_id, lambda current: current["status"] == "waiting")
    return job_id


def test_the_concierge_is_a_job_of_its_own_not_listed_and_its_name_is_reserved(daemon):
    assert daemon.call("concierge", action="status")["on"] is False
    job_id = turn_on(daemon)
    status = daemon.call("concierge", action="status")
    assert (status["id"], status["name"], status["policy"]) == (job_id, "concierge",
                                                                {"answer": "never", "act": False})
    # Not a session: out of the default list and of peers; `list {all: true}` gives it with
    # its role, so that a client can find it and attach (issue 28, the spec's JobRow.role).
    assert job_id not in [item["id"] for item in daemon.call("list")["jobs"]]
    everything = {item["id"]: item for item in daemon.call("list", all=True)["jobs"]}
    assert everything[job_id]["role"] == "concierge" and everything[job_id]["name"] == "concierge"
    assert all(item.get("role") is None for item_id, item in everything.items() if item_id != job_id)
    with Speaker(daemon, dispatch(daemon, ["sleep", "30"], name="a-session")) as other:
        assert job_id not in [peer["id"] for peer in other.call("peers")["peers"]]
    with open(os.path.join(daemon.home, "jobs", job_id, "job.json")) as handle:
        assert json.load(handle)["role"] == "concierge"
    with daemon.client() as client:
        taken = client.request("dispatch", launch(["true"], name="concierge"))
        assert taken["code"] == "bad_request" and "reserved" in taken["error"]
        other = dispatch(daemon, ["sleep", "30"], name="other")
        assert client.request("rename", {"id": other, "name": "Concierge"})["code"] == "bad_request"
    # on again: the one it has; off stops it.
    assert daemon.call("concierge", action="on")["id"] == job_id
    assert daemon.call("concierge", action="off")["on"] is False
    assert daemon.call("concierge", action="on")["id"] == job_id


def test_who_may_call_the_concierges_ops(daemon, concierge):
    other = dispatch(daemon, ["sleep", "30"], name="worker")
    session = Speaker(daemon, other)
    with daemon.client() as person:
        for op in CONCIERGE_ONLY:
            assert person.request(op, {"id": other, "text": "x", "kind": "info", "what": "stop"})["code"] == \
                "unauthorized", op
            assert session.request(op, id=other, text="x", kind="info", what="stop")["code"] == "unsupported", op
        for op in PERSON_ONLY:
            assert session.request(op, action="status", text="x")["code"] == "unsupported", op
            assert concierge.request(op, action="status", text="x")["code"] == "unsupported", op
        for op in ("schedules", "dispatch", "reply", "stop"):
            assert concierge.request(op, id=other)["code"] == "unsupported", op
        assert person.request("concierge", {"action": "fly"})["code"] == "bad_request"
    # The concierge may send to any session, and read the feed.
    assert concierge.call("send", to="worker", message="hello from the concierge")["outcome"]
    assert concierge.call("events", limit=5)["events"]
    message = wait_for(lambda: events(daemon, "message"), what="the message in the feed")[-1]
    assert (message["who"], message["whoId"]) == ("concierge", concierge_id(daemon))
    session.close()


def concierge_id(daemon):
    return daemon.call("concierge", action="status")["id"]


def test_the_policy_refuses_replies_until_the_person_allows_them_and_undo_withdraws_one(daemon, concierge):
    asker = waiting_question(daemon)
    assert concierge.call("concierge-policy") == {"answer": "never", "act": False}
    refused = concierge.request("concierge-reply", id=asker, text="yes")
    assert refused["code"] == "policy"
    assert daemon.call("concierge", action="answer", answer="routine")["policy"]["answer"] == "routine"
    assert concierge.request("concierge-reply", id=asker, text="rewrite it all")["code"] == "policy"
    assert concierge.call("concierge-reply", id=asker, text="yes", why="it always says yes") == \
        {"id": asker, "name": "asker"}
    reply = wait_for(lambda: [event for event in events(daemon, "reply") if event["id"] == asker],
                     what="the reply event")[-1]
    assert (reply["who"], reply["whoId"], reply["text"]) == ("concierge", concierge_id(daemon), "reply: yes")
    assert daemon.call("concierge", action="status")["answered"] == 1
    # Not waiting for a question: nothing to answer, whatever the policy.
    daemon.call("concierge", action="answer", answer="always")
    busy = dispatch(daemon, ["sleep", "30"], name="busy")
    assert concierge.request("concierge-reply", id=busy, text="go")["code"] == "bad_request"
    assert daemon.call("concierge", action="undo") == {}
    withdrawn = wait_for(lambda: [event for event in events(daemon, "reply")
                                  if event["id"] == asker and "Disregard" in event["text"]], what="the undo")
    assert withdrawn[-1]["mode"] == "steer"
    assert daemon.call("list", all=True) and row(daemon, asker)["queued"] == 2     # the answer, then its withdrawal
    with daemon.client() as person:
        assert person.request("concierge", {"action": "undo"})["code"] == "bad_request"     # nothing left
    # The person's setting is kept across a restart.
    daemon.restart()
    assert daemon.call("concierge", action="status")["policy"] == {"answer": "always", "act": False}


def test_routine_allows_only_a_choice_the_row_offers_and_roost_json_gives_the_start(daemon):
    write_config(daemon.home, {"concierge": {"answer": "routine", "act": True}})
    speaker = Speaker(daemon, turn_on(daemon))
    assert speaker.call("concierge-policy") == {"answer": "routine", "act": True}
    asker = waiting_question(daemon, choices=("Run the tests", "Skip"))
    assert speaker.request("concierge-reply", id=asker, text="push to main")["code"] == "policy"
    assert speaker.call("concierge-reply", id=asker, text="skip")["id"] == asker
    speaker.close()


def test_acting_needs_act_and_its_launches_carry_neither_its_role_nor_its_identity(daemon, concierge):
    worker = dispatch(daemon, ["sleep", "60"], name="worker")
    assert concierge.request("concierge-act", what="stop", id=worker)["code"] == "policy"
    assert row(daemon, worker)["state"] == "working"
    daemon.call("concierge", action="act", act=True)
    assert concierge.call("concierge-act", what="stop", id=worker, why="it hangs") == {"id": worker, "name": "worker"}
    wait_row(daemon, worker, lambda current: current["state"] == "stopped")
    assert concierge.call("concierge-act", what="respawn", id=worker)["id"] == worker
    wait_row(daemon, worker, lambda current: current["state"] == "working")
    own = concierge_id(daemon)
    assert concierge.request("concierge-act", what="stop", id=own)["code"] == "bad_request"
    started = concierge.call("concierge-act", what="dispatch", launch=launch(
        ["sh", "-c", "echo id=$ROOST_JOB_ID; sleep 30"], env={"ROOST_JOB_ID": own, "KEEP": "1"}))
    wait_for(lambda: f"id={started['id']}" in output(daemon.home, started["id"]), what="its own identity")
    assert row(daemon, started["id"]).get("role") is None
    acts = wait_for(lambda: [event for event in events(daemon, "concierge") if event.get("why") == "act"][2:] and
                    [event for event in events(daemon, "concierge") if event.get("why") == "act"], what="its acts")
    assert [event["whoId"] for event in acts] == [own] * 3


def test_a_suggestion_waits_on_the_row_and_one_key_sends_it(daemon, concierge):
    asker = waiting_question(daemon)
    busy = dispatch(daemon, ["sleep", "30"], name="busy")
    assert concierge.request("concierge-suggest", id=busy, text="go")["code"] == "bad_request"
    assert concierge.call("concierge-suggest", id=asker, text="yes", why="the tests pass") == \
        {"id": asker, "name": "asker"}
    suggested = row(daemon, asker)["suggested"]
    assert (suggested["text"], suggested["why"]) == ("yes", "the tests pass") and suggested["at"]
    sent = daemon.cli("reply", asker, "--suggested")
    assert sent.returncode == 0, sent.stderr
    reply = wait_for(lambda: [event for event in events(daemon, "reply") if event["id"] == asker],
                     what="the suggestion sent")[-1]
    assert reply["text"] == "reply: yes" and reply.get("who") is None       # the person's reply
    # The wait is over: the suggestion goes with it.
    with daemon.client() as client:
        client.call("report", {"id": asker, "token": token_of(daemon, asker), "report": {"state": "working"}})
    wait_row(daemon, asker, lambda current: current.get("suggested") is None)
    none = daemon.cli("reply", asker, "--suggested")
    assert none.returncode == 1 and b"suggested no answer" in none.stderr


def test_a_terminal_concierge_answers_with_the_cli_from_inside_its_job(daemon):
    job_id = turn_on(daemon)
    wait_for(lambda: "? " in output(daemon.home, job_id), what="its prompt")
    assert daemon.call("concierge-ask", text="what needs me?") == {"id": job_id}
    said = wait_for(lambda: events(daemon, "concierge"), timeout=20, what="its answer")[-1]
    assert (said["said"], said["text"], said["whoId"]) == ("answer", "you asked: what needs me?", job_id)
    asker = waiting_question(daemon)
    daemon.call("concierge-ask", text=f"suggest {asker} yes")
    wait_row(daemon, asker, lambda current: (current.get("suggested") or {}).get("text") == "yes", timeout=20)
    daemon.call("concierge-ask", text="policy")
    wait_for(lambda: "answer: never, act: false" in output(daemon.home, job_id), timeout=20, what="its policy")
    # The CLI's person commands say how it stands.
    shown = daemon.cli("concierge", "status")
    assert shown.returncode == 0 and b"concierge on" in shown.stdout
    assert daemon.cli("concierge", "policy", "--answer", "routine").returncode == 0
    assert daemon.call("concierge", action="status")["policy"]["answer"] == "routine"


# -- digests and standing orders (M44, M46) ----------------------------------------------


def recorder_concierge(daemon):
    """A protocol concierge that takes items: each digest is a line of its messages.jsonl."""
    status = daemon.call("concierge", action="on", launch=launch([sys.executable, RECORDER],
                                                                 env={"PROTO_MESSAGES": "1"}))
    wait_for(lambda: daemon.call("concierge", action="status")["state"] == "blocked", what="its first report")
    return status["id"]


def digests(daemon, job_id):
    path = os.path.join(daemon.home, "jobs", job_id, "messages.jsonl")
    try:
        with open(path) as handle:
            return [json.loads(line)["text"] for line in handle if '"digest"' in line]
    except FileNotFoundError:
        return []


def test_digests_say_what_changed_and_each_need_once(daemon):
    concierge = recorder_concierge(daemon)
    asker = waiting_question(daemon)
    first = wait_for(lambda: [text for text in digests(daemon, concierge) if asker in text], what="a digest")[-1]
    assert first.startswith('<roost-digest why="change"') and first.endswith("</roost-digest>")
    needs = first.split("Needs the user (new):")[1].split("\n\n")[0]
    assert f"{asker} asker waits" in needs and "Go on? [yes / no]" in needs
    # Something else happens: the next digest has it, and the same wait is not said again.
    count = len(digests(daemon, concierge))
    dispatch(daemon, ["true"], name="other")
    second = wait_for(lambda: digests(daemon, concierge)[count:], what="the next digest")[-1]
    assert "other" in second and "Needs the user (new):" not in second
    assert "1 waiting" in second and f"{asker} asker" not in second      # counted, not listed again
    # The wait ends and comes back: the need is said again.
    with daemon.client() as client:
        for report in ({"state": "working"}, {"state": "blocked", "status": "waiting", "waitingFor": "question",
                                              "question": "Go on now?", "choices": ["yes", "no"]}):
            client.call("report", {"id": asker, "token": token_of(daemon, asker), "report": report})
    wait_for(lambda: any("Needs the user (new):" in text and "Go on now?" in text
                         for text in digests(daemon, concierge)), what="the need said again")
    assert all(len(text.encode()) <= 8192 for text in digests(daemon, concierge))


def test_a_digest_is_cut_to_its_size_and_says_so(daemon):
    write_config(daemon.home, {"concierge": {"digestBytes": 1024}})
    concierge = recorder_concierge(daemon)
    for number in range(30):
        dispatch(daemon, ["true"], name=f"burst-{number}")
    cut = wait_for(lambda: [text for text in digests(daemon, concierge) if "Cut to fit" in text], timeout=20,
                   what="a digest cut to fit")[-1]
    assert len(cut.encode()) <= 1024 and cut.endswith("</roost-digest>")
    assert "older events (events)" in cut or "sessions (list)" in cut
    first = next(text for text in digests(daemon, concierge) if "older events" in text)
    assert " daemon roost " not in first and "burst-" in first     # the newest events are the ones kept


def test_standing_orders_and_their_callers(daemon, concierge):
    added = daemon.call("concierge-order", action="add", text="  check CI every morning ", when="weekdays 09:00")
    order = added["order"]
    assert (order["text"], order["when"], order["by"], order["count"]) == ("check CI every morning",
                                                                           "weekdays 09:00", "user", 0)
    assert order["nextAt"] > order["at"]
    with daemon.client() as person:
        assert person.request("concierge-order", {"action": "add", "text": "x", "when": "hourly"})["code"] == \
            "bad_request"
        assert person.request("concierge-order", {"action": "applied", "id": order["id"]})["code"] == "unsupported"
    own = concierge.call("concierge-order", action="add", text="say what finished")["order"]
    assert (own["by"], own["when"], own["nextAt"]) == ("concierge", None, None)
    assert concierge.request("concierge-order", action="rm", id=order["id"])["code"] == "unsupported"
    applied = concierge.call("concierge-order", action="applied", id=order["id"], text="CI is green")["order"]
    assert (applied["count"], bool(applied["lastAt"])) == (1, True)
    worker = dispatch(daemon, ["sleep", "30"], name="worker")
    session = Speaker(daemon, worker)
    assert session.request("concierge-order", action="list")["code"] == "unsupported"
    session.close()
    assert daemon.call("concierge", action="status")["orders"] == 2
    assert concierge.call("concierge-order", action="rm", id=own["id"])["order"]["id"] == own["id"]
    for number in range(49):
        daemon.call("concierge-order", action="add", text=f"order {number}")
    with daemon.client() as person:
        assert person.request("concierge-order", {"action": "add", "text": "one too many"})["code"] == "full"
    whys = {event.get("why") for event in events(daemon, "concierge")}
    assert {"order", "order-kept", "order-dropped"} <= whys


def test_an_order_that_comes_due_is_a_digest_with_a_due_now_section(daemon):
    concierge = recorder_concierge(daemon)
    order = daemon.call("concierge-order", action="add", text="look at the open PRs", when="every 1m")["order"]
    daemon.stop()
    path = os.path.join(daemon.home, "orders.json")
    with open(path) as handle:
        data = json.load(handle)
    data["orders"][0]["nextAt"] = int(time.time() * 1000) - 1000       # its time came while roost was down
    with open(path, "w") as handle:
        json.dump(data, handle)
    daemon.start()
    due = wait_for(lambda: [text for text in digests(daemon, concierge) if 'why="order"' in text], timeout=20,
                   what="the order's digest")[-1]
    assert "Due now:" in due and "look at the open PRs" in due.split("Due now:")[1].split("\n\n")[0]
    moved = daemon.call("concierge-order", action="list")["orders"][0]
    assert moved["id"] == order["id"] and moved["nextAt"] > time.time() * 1000


def test_the_concierge_starts_a_task_only_with_act_and_the_session_is_not_it(daemon, concierge, tmp_path):
    from boardkit import launch as task_launch, project_repo
    root = project_repo(tmp_path / "repo")
    task = daemon.call("task", action="add", title="Tidy the docs", project=root)["task"]
    for action in ("prepare", "start"):
        refused = concierge.request("task", action=action, id=task["id"], launch=task_launch(root))
        assert refused["code"] == "policy", (action, refused)
    daemon.call("concierge", action="act", act=True)
    path = concierge.call("task", action="prepare", id=task["id"])["workspace"]["path"]
    own = concierge_id(daemon)
    started = concierge.call("task", action="start", id=task["id"], launch=task_launch(
        path, command=["sh", "-c", "echo id=$ROOST_JOB_ID; sleep 30"], env={"ROOST_JOB_ID": own}))
    job_id = started["job"]["id"]
    wait_for(lambda: f"id={job_id}" in output(daemon.home, job_id), what="the session's own identity")
    assert row(daemon, job_id).get("role") is None and job_id != own


# -- the built-in concierge (no model) ---------------------------------------------------

def dialog_row(daemon, name="editor"):
    """A protocol job whose row waits on a dialog (as a terminal agent's permission prompt)."""
    job_id = dispatch(daemon, ["sleep", "60"], name=name, protocol=True)
    with daemon.client() as client:
        client.call("report", {"id": job_id, "token": token_of(daemon, job_id), "report": {
            "state": "blocked", "status": "waiting", "waitingFor": "dialog",
            "question": "Allow edits to README.md?", "choices": ["Yes", "No"]}})
    return job_id


RULES = [{"match": "Allow edits to .*\\.md", "answer": "1", "why": "docs may always be edited"}]


def builtin_on(daemon, answer, need_after=120_000):
    write_config(daemon.home, {"concierge": {"answer": answer, "rules": RULES, "needAfterMs": need_after}})
    status = daemon.call("concierge", action="on")
    wait_for(lambda: daemon.call("concierge", action="status")["summary"] == "watching the sessions",
             timeout=20, what="the built-in concierge's first report")
    return status["id"]


@pytest.mark.parametrize("answer", ["routine", "always"])
def test_the_builtin_concierge_answers_a_dialog_from_a_rule_where_the_policy_allows(daemon, answer):
    concierge = builtin_on(daemon, answer)
    editor = dialog_row(daemon)
    reply = wait_for(lambda: [event for event in events(daemon, "reply") if event["id"] == editor], timeout=20,
                     what="its answer")[-1]
    assert (reply["text"], reply["who"], reply["whoId"]) == ("reply: 1", "concierge", concierge)
    assert row(daemon, editor).get("suggested") is None


def test_under_never_the_builtin_concierge_only_suggests_and_says_what_needs_the_user(daemon):
    builtin_on(daemon, "never", need_after=0)
    editor = dialog_row(daemon)
    suggested = wait_row(daemon, editor, lambda current: current.get("suggested"), timeout=20)["suggested"]
    assert (suggested["text"], suggested["why"]) == ("1", "docs may always be edited")
    asker = waiting_question(daemon)                  # no rule for it: a need, said once
    need = wait_for(lambda: [event for event in events(daemon, "concierge")
                             if event.get("said") == "need" and asker in event["text"]], timeout=20,
                    what="the need said")
    assert "Go on?" in need[0]["text"]
    dispatch(daemon, ["true"], name="finisher")
    wait_for(lambda: [event for event in events(daemon, "concierge")
                      if event.get("said") == "info" and "finisher" in event["text"]], timeout=20,
             what="what finished said")
    assert len([event for event in events(daemon, "concierge")
                if event.get("said") == "need" and asker in event["text"]]) == 1
    assert not [event for event in events(daemon, "reply") if event["id"] == editor]
    daemon.call("concierge-ask", text="how is it going?")
    answered = wait_for(lambda: [event for event in events(daemon, "concierge") if event.get("said") == "answer"],
                        timeout=20, what="its answer")[-1]
    assert "waiting" in answered["text"] and "editor" in answered["text"]


def test_a_concierge_of_a_profile_is_told_its_tools_and_policy_first(daemon):
    write_config(daemon.home, {"concierge": {"profile": "watcher", "answer": "routine"}, "agentProfiles": {
        "watcher": {"command": agent("prompt_echo.py", 0.1), "task": "type"}}})
    job_id = daemon.call("concierge", action="on")["id"]
    wait_for(lambda: "echo: You are roost's concierge" in output(daemon.home, job_id), timeout=20,
             what="the prompt typed")
    said = output(daemon.home, job_id)
    assert "only with one of the choices" in said and "roost concierge suggest" in said


def test_the_concierge_is_never_reaped_for_idleness(daemon):
    write_config(daemon.home, {"reapIdleAfterMs": 300})
    job_id = turn_on(daemon)

    def pid():
        with open(os.path.join(daemon.home, "jobs", job_id, "job.json")) as handle:
            return json.load(handle).get("pid")
    wait_for(lambda: daemon.call("concierge", action="status")["status"] == "waiting", timeout=20,
             what="the concierge waiting at its prompt")
    first = pid()
    other = dispatch(daemon, agent("prompt_echo.py", 0.1), name="idler")
    wait_row(daemon, other, lambda current: current["reaped"], timeout=20)      # as long as that takes
    # Reaped, it would have been started again by the next digest: another process.
    assert daemon.call("concierge", action="status")["on"] is True and pid() == first


def test_an_unregistered_agent_is_refused_and_hubs_are_pushed_what_the_concierge_says(daemon, concierge):
    with daemon.client() as agent_connection:
        agent_connection.call("hello", {"protocol": 1, "agent": {"name": "stranger"}, "capabilities": ["report"]})
        for op in CONCIERGE_ONLY:
            assert agent_connection.request(op, {"id": "x", "text": "x", "kind": "info", "what": "stop"})["code"] \
                == "unauthorized", op
        for op in PERSON_ONLY + ("concierge-order",):
            assert agent_connection.request(op, {"action": "list", "text": "x"})["code"] == "unsupported", op
    with daemon.client() as hub:
        hub.call("subscribe")
        concierge.call("concierge-say", kind="need", text="asker waits for you")

        def pushed():
            event = hub.next_event()
            return event if event.get("event") == "concierge" else None
        push = wait_for(pushed, what="the concierge push")
    assert push["said"] == {"kind": "need", "text": "asker waits for you", "at": push["said"]["at"]}
    assert push["status"]["on"] is True and push["status"]["id"] == concierge_id(daemon)


def test_the_builtin_concierge_says_a_due_order_and_marks_it_applied(daemon):
    builtin_on(daemon, "never")
    daemon.call("concierge-order", action="add", text="look at the open PRs", when="every 1m")
    daemon.stop()
    path = os.path.join(daemon.home, "orders.json")
    with open(path) as handle:
        data = json.load(handle)
    data["orders"][0]["nextAt"] = int(time.time() * 1000) - 1000
    with open(path, "w") as handle:
        json.dump(data, handle)
    daemon.start()
    said = wait_for(lambda: [event for event in events(daemon, "concierge")
                             if event.get("said") == "info" and "due now: order #1" in event["text"]], timeout=30,
                    what="the due order said")
    assert "look at the open PRs" in said[0]["text"]
    applied = wait_for(lambda: daemon.call("concierge-order", action="list")["orders"][0]["count"] >= 1 and
                       daemon.call("concierge-order", action="list")["orders"][0], timeout=30, what="the order applied")
    assert applied["count"] == 1
    assert applied["lastAt"] and applied["nextAt"] > time.time() * 1000
