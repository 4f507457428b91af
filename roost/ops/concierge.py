"""The concierge's ops (M44, M45): `concierge {action}` and `concierge-ask`, the
person's; `concierge-say`, `-policy`, `-suggest`, `-reply` and `-act` on the concierge's
own connection (roost.ops.callers says who may call which). The desk
(`call.services.concierge`) does the work; the policy is checked there, by the daemon."""

from roost.contract import Anything, Choice, Flag, Integer, ListOf, Number, Text
from roost.errors import BUSY, FULL, NOT_FOUND, POLICY, UNAUTHORIZED, UNSUPPORTED, RoostError
from roost.jobs.launch_args import DISPATCH_ARGS
from roost.ops import Action, callers, op
from roost.ops.jobs import FINDS, STARTS, STOPS
from roost.ops.shapes import CONCIERGE_STATUS, JOB_AND_NAME, STANDING_ORDER

ANSWERS = ("never", "routine", "always")
# A reply to a session (the reply desk's: roost.jobs.replies), as concierge-ask and -reply make.
REPLIES = (UNSUPPORTED, FULL) + STARTS
TARGET = Text("A session's id, unique id prefix or unique name.", min_length=1, trim=True)
WHY = Text("Why, in a few words (shown to the user).", trim=True, default=None)
TEXT = Text(min_length=1, trim=True)


def _concierge(call):
    """The concierge's job, which this connection speaks for."""
    job = call.services.jobs.get(call.session.job_id)
    if job is None or job.record.get("role") != "concierge":
        raise RoostError(UNAUTHORIZED, "this connection does not speak for the concierge")
    return job


def _target(call):
    return call.services.jobs.resolve(call.args["id"])


def _why(call):
    return call.args["why"] or None


@op("concierge", by="action", result=CONCIERGE_STATUS, codes=(NOT_FOUND,), actions={
    "on": Action({"launch": DISPATCH_ARGS.but(default=None, doc="A launch the hub built; absent: roost.json's "
                                                                "concierge, or the built-in one.")},
                 codes=STARTS, doc="Start it, or the job it had."),
    "off": Action(codes=STOPS, doc="Stop it."),
    "status": Action(doc="How it stands."),
    "answer": Action({"answer": Choice(ANSWERS)}, doc="M45: set the policy's answer."),
    "act": Action({"act": Flag()}, doc="M45: set the policy's act."),
    "undo": Action(result={}, codes=FINDS + REPLIES, doc="M45: withdraw the last answer it gave a session."),
})
def concierge(call):
    desk = call.services.concierge
    action = call.args["action"]
    if action == "on":
        desk.turn_on(call.args["launch"])
    elif action == "off":
        desk.turn_off()
    elif action == "answer":
        desk.set_policy(answer=call.args["answer"])
    elif action == "act":
        desk.set_policy(act=call.args["act"])
    elif action == "undo":
        return desk.undo()
    return desk.status()


@op("concierge-ask", args={"text": TEXT}, result={"id": Text("The concierge's job.")}, codes=(NOT_FOUND,) + REPLIES,
    doc="M44, from the hub: a question for the concierge; its answer comes as a `concierge` event.")
def concierge_ask(call):
    return call.services.concierge.ask(call.args["text"])


@op("concierge-say", args={"kind": Choice(("info", "need", "answer")), "text": TEXT}, result={},
    doc="M44, on its own connection: what it tells the user, or its answer to a question.")
def concierge_say(call):
    job = _concierge(call)
    call.services.concierge.say(job, call.args["kind"], call.args["text"])
    return {}


@op("concierge-policy", args={}, result={
    "answer": Choice(ANSWERS), "act": Flag(),
    "rules": Anything("roost.json's concierge.rules: the user's own words for it.", optional=True),
    "needAfterMs": Number("roost.json's concierge.needAfterMs.", optional=True),
}, doc="M45, on its connection: the policy in force (which of its tools it may use).")
def concierge_policy(call):
    _concierge(call)
    return call.services.concierge.policy_in_force()


@op("concierge-suggest", args={"id": TARGET, "text": TEXT, "why": WHY}, result=JOB_AND_NAME, codes=FINDS,
    doc="M45, on its connection: the answer it would give a session that waits for one, and why.")
def concierge_suggest(call):
    _concierge(call)
    return call.services.concierge.suggest(_target(call), call.args["text"], _why(call))


@op("concierge-reply", args={"id": TARGET, "text": TEXT, "why": WHY}, result=JOB_AND_NAME,
    codes=FINDS + (POLICY,) + REPLIES,
    doc="M45, on its connection: an answer in the user's place; refused (`policy`) unless the policy allows.")
def concierge_reply(call):
    job = _concierge(call)
    return call.services.concierge.reply(job, _target(call), call.args["text"], _why(call))


@op("concierge-act", by="what", result=JOB_AND_NAME, codes=(POLICY,), actions={
    "stop": Action({"id": TARGET, "why": WHY}, codes=FINDS + STOPS),
    "respawn": Action({"id": TARGET, "why": WHY}, codes=FINDS + (BUSY,) + STARTS),
    "dispatch": Action({"launch": DISPATCH_ARGS, "why": WHY}, codes=(UNSUPPORTED,) + STARTS),
}, doc="M45, on its connection: stop, respawn or start a session, where the policy says act.")
def concierge_act(call):
    job = _concierge(call)
    what = call.args["what"]
    if what == "dispatch":
        launch = call.args["launch"]
        verdict = call.services.admission.check(launch)
        if verdict is not None:
            # issue 29: a budget, a plan window past admitBelowPercent, maxLive: not now.
            raise RoostError(BUSY, verdict.why)
        return call.services.concierge.act(job, what, launch=launch, why=_why(call))
    return call.services.concierge.act(job, what, target=_target(call), why=_why(call))


ORDER_ID = Integer("An order's number.")


@op("concierge-order", by="action", result={
    "orders": ListOf(STANDING_ORDER), "order": STANDING_ORDER.but(optional=True, doc="The order acted on."),
}, actions={
    "list": Action(doc="List them."),
    "add": Action({"text": Text("Cut at 500, one line.", min_length=1, trim=True),
                   "when": Text("M39's vocabulary (`every 30m`, `daily 18:00`, `weekdays 09:00`, `cron \"...\"`).",
                                default=None)},
                  codes=(FULL,), doc="Keep one (the hub's or the concierge's connection)."),
    "rm": Action({"id": ORDER_ID}, codes=(NOT_FOUND, UNSUPPORTED), doc="Drop one (the concierge only its own)."),
    "applied": Action({"id": ORDER_ID, "text": Text("What it did.", default=None)}, codes=(NOT_FOUND, UNSUPPORTED),
                      doc="Mark one applied (the concierge's)."),
}, codes=(UNAUTHORIZED,))
def concierge_order(call):
    """M46: the person's connection (`by: "user"`) or the concierge's (`by: "concierge"`)."""
    orders = call.services.orders
    action = call.args["action"]
    by_concierge = call.session.caller == callers.CONCIERGE
    concierge = _concierge(call) if by_concierge else None
    order = None
    if action == "add":
        order = orders.add(call.args["text"], call.args["when"], "concierge" if by_concierge else "user",
                           concierge.id if concierge else None)
    elif action == "rm":
        order = orders.remove(call.args["id"], "concierge" if by_concierge else "user")
    elif action == "applied":
        if not by_concierge:
            raise RoostError(UNSUPPORTED, "applied is the concierge's: it marks what it did")
        order = orders.applied(call.args["id"], call.args["text"], concierge.id)
    result = {"orders": orders.listed()}
    if order is not None:
        result["order"] = dict(order)
    return result
