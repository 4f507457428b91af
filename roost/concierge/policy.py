"""The concierge's policy (M45), enforced by the daemon and never left to the agent's good
will: what it may answer in the user's place, and whether it may act.

| answer    | concierge-reply may send                                                  |
|-----------|---------------------------------------------------------------------------|
| `never`   | nothing (it may still suggest: the person sends a suggestion with a key)  |
| `routine` | one of the choices the waiting row offers, or a dialog's plain key (1-9, y, n) |
| `always`  | any text, to a row that waits for a question or on a dialog               |

`act: true` lets it stop, respawn and dispatch sessions (concierge-act); false refuses
them. The person sets both (`concierge {action: answer | act}`); roost.json's
`concierge.answer` and `concierge.act` are the start, and the person's changes are kept.
"""

from roost.errors import POLICY, RoostError, bad_request

ANSWERS = ("never", "routine", "always")
DEFAULT = {"answer": "never", "act": False}
# What a dialog takes as a plain pick when its row lists no choices.
DIALOG_KEYS = ("1", "2", "3", "4", "5", "6", "7", "8", "9", "y", "n", "yes", "no")
ANSWERABLE = ("question", "dialog")


def start_value(config):
    """The policy roost.json gives (its `concierge` object), else the default."""
    given = config.get("concierge") if isinstance(config, dict) else None
    given = given if isinstance(given, dict) else {}
    answer = given.get("answer") if given.get("answer") in ANSWERS else DEFAULT["answer"]
    act = given.get("act") if isinstance(given.get("act"), bool) else DEFAULT["act"]
    return {"answer": answer, "act": act}


def check_answer(value):
    if value not in ANSWERS:
        raise bad_request(f"answer must be one of {', '.join(ANSWERS)}")
    return value


def waits_for_answer(job):
    row = job.record
    return job.running and row.get("status") == "waiting" and row.get("waitingFor") in ANSWERABLE


def is_routine(row, text):
    """A pick among what the row offers: one of its choices, or a dialog's plain key."""
    picked = text.strip().lower()
    choices = [choice.strip().lower() for choice in row.get("choices") or []]
    if picked in choices:
        return True
    if row.get("waitingFor") == "dialog":
        return picked in DIALOG_KEYS if not choices else picked.isdigit() and 1 <= int(picked) <= len(choices)
    return False


def check_reply(policy, job, text):
    """Refuse a concierge-reply the policy does not allow: bad_request unless the row
    waits for an answer, `policy` unless the setting lets this answer through."""
    if not waits_for_answer(job):
        raise bad_request(f"{job.name} does not wait for a question or on a dialog: nothing to answer")
    answer = policy["answer"]
    if answer == "never":
        raise RoostError(POLICY, "the policy says answer: never; suggest it instead (concierge-suggest)")
    if answer == "routine" and not is_routine(job.record, text):
        raise RoostError(POLICY, "the policy says answer: routine: only one of the choices the row offers "
                                   "(or a dialog's plain key); suggest this one instead")


def check_act(policy):
    if not policy["act"]:
        raise RoostError(POLICY, "the policy says act: false: the concierge may not stop, respawn or start "
                                   "sessions (the person sets concierge {action: act})")
