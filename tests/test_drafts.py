"""Never type over the user's draft (issue 19 item 4): while a person attached to a job
has typed a line not yet submitted, roost types nothing there, and the row says
`held`; the line's submit, clear (Ctrl-U) or the person's detach lets it go on. A real
daemon, a real pty, the attach ops driven over the wire as `roost attach` does."""

from attachkit import Attacher
from conftest import wait_for
from jobkit import agent, dispatch, output, row, wait_row
from roost.term.drafts import HELD_TEXT, leaves_draft

TERM = {"settleMs": 200, "waiting": r"^>"}   # a prompt, whatever its input line holds


def start_waiting(daemon):
    job_id = dispatch(daemon, agent("prompt_echo.py", "0.1"), term=TERM)
    wait_row(daemon, job_id, lambda current: current["status"] == "waiting", what="the prompt")
    return job_id


def draft_started(daemon, job_id, keys=b"dra"):
    attacher = Attacher(daemon, job_id)
    attacher.pump_until(lambda: b">" in attacher.output, what="the repaint")
    assert attacher.send(keys)["taken"]
    wait_row(daemon, job_id, lambda current: current.get("held") == HELD_TEXT, what="the row to say held")
    return attacher


def test_a_reply_waits_while_the_user_has_a_draft_and_follows_its_submit(daemon):
    job_id = start_waiting(daemon)
    attacher = draft_started(daemon, job_id)
    try:
        answer = daemon.call("reply", id=job_id, text="hello")
        assert answer == {"delivered": False, "saved": True}
        assert row(daemon, job_id)["queued"] == 1
        attacher.send(b"ft\r")      # the user submits their own line
        wait_for(lambda: "echo: hello" in output(daemon.home, job_id), what="the reply typed after it")
        log = output(daemon.home, job_id)
        assert "echo: draft" in log and "drafthello" not in log
        assert log.index("echo: draft") < log.index("echo: hello")
        wait_row(daemon, job_id, lambda current: "held" not in current and current["queued"] == 0,
                 what="the hold gone from the row")
    finally:
        attacher.close()


def test_a_reply_held_by_a_draft_is_typed_once_the_user_detaches(daemon):
    job_id = start_waiting(daemon)
    attacher = draft_started(daemon, job_id, keys=b"xyz\x7f\x7f\x7f")   # typed, then erased by hand
    try:
        assert daemon.call("reply", id=job_id, text="hello")["saved"]
        wait_for(lambda: row(daemon, job_id)["queued"] == 1, what="the reply queued")
        assert "echo: hello" not in output(daemon.home, job_id)
        attacher.client.call("detach", {"id": job_id})
        wait_for(lambda: "echo: hello" in output(daemon.home, job_id), what="the reply typed after the detach")
        assert "held" not in row(daemon, job_id)
    finally:
        attacher.close()


def test_ctrl_u_clears_the_draft_and_lets_typing_go_on(daemon):
    job_id = start_waiting(daemon)
    attacher = draft_started(daemon, job_id)
    try:
        assert daemon.call("reply", id=job_id, text="hello")["saved"]
        attacher.send(b"\x15")
        wait_for(lambda: "echo: hello" in output(daemon.home, job_id), what="the reply typed after Ctrl-U")
        assert "drahello" not in output(daemon.home, job_id)
    finally:
        attacher.close()


def test_what_makes_and_ends_a_draft():
    assert leaves_draft(b"a", False)
    assert not leaves_draft(b"abc\r", True)
    assert leaves_draft(b"abc\rde", False)
    assert not leaves_draft(b"\x15", True) and not leaves_draft(b"x\x03", True)
    assert leaves_draft(b"\x1b[12;3R", True) and not leaves_draft(b"\x1b[12;3R", False)   # a report is no key
