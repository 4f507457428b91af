"""The concierge's ops (M44, M45): `concierge {action}` and `concierge-ask`, the
person's; `concierge-say`, `-policy`, `-suggest`, `-reply` and `-act` on the concierge's
own connection (roost.ops.callers says who may call which). The desk
(`call.services.concierge`) does the work; the policy is checked there, by the daemon."""

from roost.errors import RoostError, bad_request
from roost.ops import args as read
from roost.ops import callers, op

ACTIONS = ("on", "off", "status", "answer", "act", "undo")
ACT_WHATS = ("stop", "respawn", "dispatch")


def _concierge(call):
    """The concierge's job, which this connection speaks for."""
    job = call.services.jobs.get(call.session.job_id)
    if job is None or job.record.get("role") != "concierge":
        raise RoostError("unauthorized", "this connection does not speak for the concierge")
    return job


def _target(call):
    return call.services.jobs.resolve(read.text(call.args, "id", min_length=1, trim=True))


def _why(call):
    why = read.text(call.args, "why", default=None, trim=True)
    return why or None


@op("concierge")
def concierge(call):
    desk = call.services.concierge
    action = read.choice(call.args, "action", ACTIONS)
    if action == "on":
        launch = read.mapping(call.args, "launch", default=None)
        desk.turn_on(launch)
    elif action == "off":
        desk.turn_off()
    elif action == "answer":
        desk.set_policy(answer=read.choice(call.args, "answer", ("never", "routine", "always")))
    elif action == "act":
        act = read.flag(call.args, "act", default=None)
        if act is None:
            raise bad_request("act is required (true or false)")
        desk.set_policy(act=act)
    elif action == "undo":
        return desk.undo()
    return desk.status()


@op("concierge-ask")
def concierge_ask(call):
    return call.services.concierge.ask(read.text(call.args, "text", min_length=1, trim=True))


@op("concierge-say")
def concierge_say(call):
    job = _concierge(call)
    kind = read.choice(call.args, "kind", ("info", "need", "answer"))
    call.services.concierge.say(job, kind, read.text(call.args, "text", min_length=1, trim=True))
    return {}


@op("concierge-policy")
def concierge_policy(call):
    _concierge(call)
    return call.services.concierge.policy_in_force()


@op("concierge-suggest")
def concierge_suggest(call):
    _concierge(call)
    text = read.text(call.args, "text", min_length=1, trim=True)
    return call.services.concierge.suggest(_target(call), text, _why(call))


@op("concierge-reply")
def concierge_reply(call):
    job = _concierge(call)
    text = read.text(call.args, "text", min_length=1, trim=True)
    return call.services.concierge.reply(job, _target(call), text, _why(call))


@op("concierge-act")
def concierge_act(call):
    job = _concierge(call)
    what = read.choice(call.args, "what", ACT_WHATS)
    if what == "dispatch":
        launch = read.mapping(call.args, "launch")
        verdict = call.services.admission.check(launch)
        if verdict is not None:
            # issue 29: a budget, a plan window past admitBelowPercent, maxLive: not now.
            raise RoostError("busy", verdict.why)
        return call.services.concierge.act(job, what, launch=launch, why=_why(call))
    return call.services.concierge.act(job, what, target=_target(call), why=_why(call))


@op("concierge-order")
def concierge_order(call):
    """M46: the person's connection (`by: "user"`) or the concierge's (`by: "concierge"`)."""
    orders = call.services.orders
    action = read.choice(call.args, "action", ("add", "rm", "list", "applied"))
    by_concierge = call.session.caller == callers.CONCIERGE
    concierge = _concierge(call) if by_concierge else None
    order = None
    if action == "add":
        order = orders.add(read.text(call.args, "text", min_length=1, trim=True), call.args.get("when"),
                           "concierge" if by_concierge else "user", concierge.id if concierge else None)
    elif action == "rm":
        order = orders.remove(call.args.get("id"), "concierge" if by_concierge else "user")
    elif action == "applied":
        if not by_concierge:
            raise RoostError("unsupported", "applied is the concierge's: it marks what it did")
        order = orders.applied(call.args.get("id"), call.args.get("text"), concierge.id)
    result = {"orders": orders.listed()}
    if order is not None:
        result["order"] = dict(order)
    return result
