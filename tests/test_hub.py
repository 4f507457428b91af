"""The hub (`roost hub`, issue 18) in a real terminal: tmux runs `python -m roost hub`
against a real daemon with fake agents; `send-keys` types and `capture-pane` reads the
screen."""

import os
import re

import pytest

from conftest import PYTHON, wait_for
from jobkit import agent, dispatch, job_token, output, row, wait_row, wait_state
from tmuxkit import TMUX, Tmux, start_hub

pytestmark = pytest.mark.skipif(not os.path.exists(TMUX), reason="tmux is not installed")


@pytest.fixture
def tmux(daemon):
    terminal = Tmux(os.path.dirname(daemon.home), daemon.env)
    yield terminal
    terminal.stop()


def asker(daemon, name="asker"):
    job_id = dispatch(daemon, agent("asks_question.py"), name=name, term={"settleMs": 200})
    # Its question shown: the pause before it (0.2 s, as long as settleMs) may read as a wait too.
    wait_row(daemon, job_id, lambda current: current["state"] == "blocked" and "Choose" in (current["summary"] or ""),
             what=f"{name} to ask")
    return job_id


def worker(daemon, name="worker"):
    return dispatch(daemon, agent("works_a_while.py", 120, 0.2), name=name)


def test_the_groups_as_a_person_thinks(daemon, tmux):
    asker(daemon)
    worker(daemon)
    done = dispatch(daemon, agent("works_a_while.py", 0.2, 0.05, 0), name="quick")
    failed = dispatch(daemon, agent("works_a_while.py", 0.2, 0.05, 3), name="broken")
    wait_state(daemon, done, "done")
    wait_state(daemon, failed, "failed")
    start_hub(tmux)
    # The groups' titles and their rows (a capture may come between the two in one redraw).
    screen = tmux.wait_screen(lambda text: all(title in text for title in
                                               ("NEEDS YOU (1)", "WORKING (1)", "FINISHED (1)", "FAILED (1)",
                                                "Choose [1-3]:", "tick ", "exited with status 3")),
                              what="the four groups and their rows")
    lines = screen.splitlines()
    order = [next(i for i, line in enumerate(lines) if title in line)
             for title in ("NEEDS YOU", "WORKING", "FINISHED", "FAILED")]
    assert order == sorted(order)
    assert "Choose [1-3]:" in lines[order[0] + 1] and "asker" in lines[order[0] + 1]
    assert "tick " in lines[order[1] + 1] and "worker" in lines[order[1] + 1]
    assert "exited with status 3" in lines[order[3] + 1]
    assert "enter attach" in screen and "q quit" in screen
    # The working row follows the job's screen, pushed (no polling): its tick moves on.
    first = next(line for line in lines if "worker" in line)
    tmux.wait_screen(lambda text: next(line for line in text.splitlines() if "worker" in line) != first,
                     what="the worker's line to change")
    tmux.keys("q")
    # tmux does not always learn the exit status: test_q_quits_with_status_0 checks it.
    tmux.wait_screen(lambda _: tmux.dead().startswith("1"), what="the hub to quit")


def test_a_new_job_and_a_removal_show_up_live(daemon, tmux):
    start_hub(tmux)
    tmux.wait_text("no jobs yet")
    job_id = worker(daemon, "late-comer")
    tmux.wait_text("late-comer")
    daemon.call("stop", id=job_id)
    tmux.wait_text("FAILED (1)")
    daemon.call("rm", id=job_id)
    tmux.wait_screen(lambda text: "late-comer" not in text, what="the removed row to go")


def test_attach_from_the_hub_and_back(daemon, tmux):
    job_id = asker(daemon)
    start_hub(tmux)
    tmux.wait_text("NEEDS YOU (1)")
    tmux.keys("Enter")
    screen = tmux.wait_text("Which database should I use?")
    assert "NEEDS YOU" not in screen
    tmux.type("1")
    tmux.keys("Enter")
    tmux.wait_text("using postgres")
    tmux.keys("C-q")
    screen = tmux.wait_text("detached from asker")
    assert "NEEDS YOU (1)" in screen or "WORKING (1)" in screen
    assert "using postgres" in output(daemon.home, job_id)
    # The rows kept coming while attached: the job asked again and waits.
    tmux.wait_text("NEEDS YOU (1)")


def test_reply_with_the_one_line_editor(daemon, tmux):
    job_id = asker(daemon)
    start_hub(tmux)
    tmux.wait_text("NEEDS YOU (1)")
    tmux.keys("r")
    tmux.wait_text("reply to asker:")
    tmux.type("3x")
    tmux.keys("BSpace")                       # the editor edits: "3x" becomes "3"
    tmux.keys("Enter")
    tmux.wait_text("reply to asker: ")
    wait_for(lambda: "using none" in output(daemon.home, job_id), what="the reply typed into the job")


def test_an_escaped_reply_sends_nothing(daemon, tmux):
    job_id = asker(daemon)
    start_hub(tmux)
    tmux.wait_text("NEEDS YOU (1)")
    tmux.keys("r")
    tmux.wait_text("reply to asker:")
    tmux.type("2")
    tmux.keys("Escape")
    tmux.wait_screen(lambda text: "reply to asker:" not in text, what="the editor to close")
    tmux.keys("p")                            # peek: the job's screen, still asking
    screen = tmux.wait_text("peek: asker")
    assert "Choose [1-3]:" in screen
    assert "using" not in output(daemon.home, job_id)


def test_a_jobs_timeline_on_its_own_key(daemon, tmux):
    job_id = asker(daemon)
    start_hub(tmux)
    tmux.wait_text("NEEDS YOU (1)")
    tmux.keys("T")
    screen = tmux.wait_text(f"timeline: asker ({job_id})")
    assert re.search(r"\d\d:\d\d:\d\d\.\d{3} started: pid \d+", screen)
    assert re.search(r"state blocked/waiting/\S+\s+\[kernel; the kernel: pid \d+ `python\S*` reads its terminal", screen)
    tmux.keys("T")                            # its key closes it again
    tmux.wait_screen(lambda text: "timeline: asker" not in text, what="the timeline to close")


def test_stop_asks_first_then_stops(daemon, tmux):
    job_id = worker(daemon)
    start_hub(tmux)
    tmux.wait_text("WORKING (1)")
    tmux.keys("s")
    tmux.wait_text("stop worker? (y/n)")
    tmux.keys("n")
    tmux.wait_screen(lambda text: "(y/n)" not in text, what="the question to go")
    assert row(daemon, job_id)["state"] == "working"
    tmux.keys("s")
    tmux.wait_text("stop worker? (y/n)")
    tmux.keys("y")
    tmux.wait_text("FAILED (1)")
    assert row(daemon, job_id)["state"] == "stopped"


def test_rename_and_pin(daemon, tmux):
    first = worker(daemon, "first")
    second = worker(daemon, "second")
    start_hub(tmux)
    tmux.wait_text("WORKING (2)")
    tmux.keys("j", "n")
    tmux.wait_text("rename second:")
    tmux.keys("C-u")
    tmux.type("renamed")
    tmux.keys("Enter")
    tmux.wait_text("renamed to renamed")
    assert row(daemon, second)["name"] == "renamed"
    tmux.keys("P")
    tmux.wait_text("pinned renamed")
    assert row(daemon, second)["pinned"] and not row(daemon, first)["pinned"]
    tmux.wait_screen(lambda text: text.index("renamed") < text.index("first"), what="the pinned row first")


def test_needs_you_is_ranked_by_what_answering_unblocks(daemon, tmux):
    asker(daemon, "asked-first")                # waited longest
    holder = asker(daemon, "holds-a-task")
    daemon.call("task", action="add", title="the schema")
    daemon.call("task", action="add", title="the api", after=[1])
    with daemon.client() as client:
        client.call("speak_for", {"id": holder, "token": job_token(daemon.home, holder)})
        client.call("task", {"action": "claim", "id": 1})
    start_hub(tmux)
    screen = tmux.wait_screen(lambda text: all(part in text for part in ("NEEDS YOU (2)", "1 task wait on #1",
                                                                         "asked-first")),
                              what="the group and both its rows")
    lines = screen.splitlines()
    top = lines.index(next(line for line in lines if "NEEDS YOU" in line))
    assert "holds-a-task" in lines[top + 1] and "1 task wait on #1" in lines[top + 1]
    assert "asked-first" in lines[top + 2]


def test_a_resize_to_80x24_redraws_and_stays_usable(daemon, tmux):
    for number in range(30):
        worker(daemon, f"w{number:02}")
    asker(daemon)
    start_hub(tmux)
    tmux.wait_text("WORKING (30)")
    tmux.resize(80, 24)
    wait_for(lambda: tmux.size() == "80x24", what="the window to be 80x24")
    screen = tmux.wait_screen(lambda text: "q quit" in text and "NEEDS YOU (1)" in text, what="the redraw")
    lines = screen.splitlines()
    assert len(lines) <= 24 and all(len(line) <= 80 for line in lines)
    assert "roost hub" in lines[0]
    for _ in range(40):                       # the selection scrolls down to the last job
        tmux.keys("j")
    tmux.wait_text("w29")
    assert "roost hub" in tmux.screen().splitlines()[0]


def test_no_color_draws_plain_text(daemon, tmux):
    asker(daemon)
    worker(daemon)
    start_hub(tmux, NO_COLOR="1")
    screen = tmux.wait_text("WORKING (1)")
    assert "! NEEDS YOU (1)" in screen and "* WORKING (1)" in screen
    assert not any(glyph in screen for glyph in "◆●✓✗▸▲↑↓")
    coloured = tmux.screen(escapes=True)
    assert not re.search(r"\x1b\[[0-9;]*(3[0-7]|9[0-7]|38;)", coloured), coloured   # no foreground colour


def test_colours_and_glyphs_by_default(daemon, tmux):
    asker(daemon)
    start_hub(tmux)
    screen = tmux.wait_text("NEEDS YOU (1)")
    assert "◆ NEEDS YOU (1)" in screen
    assert "\x1b[33m" in tmux.screen(escapes=True) or "\x1b[93m" in tmux.screen(escapes=True)


def test_roost_alone_in_a_terminal_opens_the_hub(daemon, tmux):
    worker(daemon)
    start_hub(tmux, argv=[PYTHON, "-m", "roost"])
    tmux.wait_text("WORKING (1)")


def test_filter_the_rows(daemon, tmux):
    worker(daemon, "alpha")
    worker(daemon, "beta")
    start_hub(tmux)
    tmux.wait_text("WORKING (2)")
    tmux.keys("/")
    tmux.type("bet")
    screen = tmux.wait_text("WORKING (1)")
    assert "beta" in screen and "alpha" not in screen
    tmux.keys("Enter", "Escape")
    tmux.wait_text("WORKING (2)")


def test_the_feed_the_board_and_help(daemon, tmux):
    worker(daemon)
    daemon.call("task", action="add", title="write the docs")
    start_hub(tmux)
    tmux.wait_text("WORKING (1)")
    tmux.keys("e")
    tmux.wait_text("roost hub: events")
    tmux.keys("q", "t")
    tmux.wait_text("write the docs")
    tmux.keys("q", "?")
    tmux.wait_text("ranked by what answering unblocks")
    tmux.keys("q")
    tmux.wait_text("WORKING (1)")


def test_the_hub_needs_a_terminal(daemon):
    result = daemon.cli("hub")
    assert result.returncode == 2
    assert b"needs a terminal" in result.stderr


def test_q_quits_with_status_0_and_gives_the_terminal_back(daemon):
    import pexpect

    worker(daemon)
    child = pexpect.spawn(PYTHON, ["-m", "roost", "hub"], env={**daemon.env, "TERM": "xterm-256color"},
                          dimensions=(24, 80), timeout=15)
    child.delaybeforesend = None
    try:
        child.expect("WORKING")
        child.send("q")
        child.expect(pexpect.EOF)
        assert b"\x1b[?1049l" in child.before       # out of the alternate screen
    finally:
        child.close()
    assert child.exitstatus == 0


def test_a_dumb_terminal_gets_the_groups_as_plain_text(daemon):
    import pexpect

    asker(daemon)
    worker(daemon)
    child = pexpect.spawn(PYTHON, ["-m", "roost", "hub"], env={**daemon.env, "TERM": "dumb"},
                          dimensions=(24, 80), timeout=15)
    try:
        child.expect(pexpect.EOF)
        text = child.before.decode()
    finally:
        child.close()
    assert child.exitstatus == 0
    assert "! NEEDS YOU (1)" in text and "* WORKING (1)" in text and "Choose [1-3]:" in text
    assert "\x1b[" not in text


def test_the_daemon_gone_ends_the_hub_with_status_3(daemon):
    import pexpect

    worker(daemon)
    child = pexpect.spawn(PYTHON, ["-m", "roost", "hub"], env={**daemon.env, "TERM": "xterm-256color"},
                          dimensions=(24, 80), timeout=15)
    try:
        child.expect("WORKING")
        daemon.kill9()
        child.expect("the daemon closed the connection")
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 3


def test_reply_offers_the_suggested_answer(daemon, tmux):
    from conciergekit import Speaker, turn_on

    job_id = asker(daemon)
    # M45: the concierge suggests an answer on the row (concierge-suggest on its connection).
    concierge = Speaker(daemon, turn_on(daemon))
    try:
        concierge.call("concierge-suggest", id=job_id, text="2", why="sqlite fits one machine")
    finally:
        concierge.close()
    wait_row(daemon, job_id, lambda current: (current.get("suggested") or {}).get("text") == "2"
             and current["state"] == "blocked", what="the row with its suggestion")
    start_hub(tmux)
    tmux.wait_text("(suggested: 2)")
    tmux.keys("r")
    screen = tmux.wait_text("the suggested answer; edit or Enter")
    assert "reply to asker (the suggested answer; edit or Enter): 2" in screen
    tmux.keys("Enter")
    wait_for(lambda: "using sqlite" in output(daemon.home, job_id), what="the suggestion sent")


def test_a_session_at_its_usage_limit_is_ranked_after_those_that_need_an_answer():
    from roost.hub.fleet import rank
    from roost.hub.screen import row_text
    parked = {"id": "a", "state": "blocked", "waitingFor": "limit", "resetsAt": 1_800_000_000_000,
              "summary": "You've hit your limit · resets 3pm", "stateSince": 1}
    asking = {"id": "b", "state": "blocked", "waitingFor": "question", "summary": "Go on?", "stateSince": 2}
    assert rank(asking, {})[0] < rank(parked, {})[0]
    text = row_text(parked, "needs", None)
    assert text.startswith("[usage limit, resets ") and text.endswith("] You've hit your limit · resets 3pm")
    assert row_text(dict(parked, resetsAt=None), "needs", None).startswith("[usage limit, no reset time shown]")
