"""The concierge: an agent that watches the sessions for you, within a policy roost
enforces. on, off, status, ask and policy are yours; say, suggest, reply and act are
the concierge's own, run inside its job (its shell tool), and act for it.

Usage:
  roost concierge on [--profile=PROFILE] [--json] [--] [<command>...]
  roost concierge off [--json]
  roost concierge status [--json]
  roost concierge ask <text>... [--json]
  roost concierge policy [--answer=ANSWER] [--act=BOOL] [--json]
  roost concierge undo [--json]
  roost concierge orders [--json]
  roost concierge order add <text>... [--when=WHEN] [--json]
  roost concierge order rm <n> [--json]
  roost concierge order applied <n> [<text>...] [--json]
  roost concierge say (info | need | answer) <text>... [--json]
  roost concierge suggest <id> <text>... [--why=WHY] [--json]
  roost concierge reply <id> <text>... [--why=WHY] [--json]
  roost concierge act (stop | respawn) <id> [--why=WHY] [--json]
  roost concierge builtin
  roost concierge --help

Options:
  --profile=PROFILE  on: the agent profile that plays it (default: roost.json's
                     concierge.profile); after `--`, a command instead
  --answer=ANSWER    policy: what it may answer in your place: never, routine (one of
                     the choices a session offers) or always
  --act=BOOL         policy: whether it may stop, respawn and start sessions (true, false)
  --why=WHY          why it suggests, answers or acts (shown to you)
  --when=WHEN        order add: its clock, in the schedules' words (every 30m,
                     daily 18:00, weekdays 09:00, cron "..."); none: in every digest
  --json             print the op's result as JSON

builtin runs the built-in concierge (roost starts it as the concierge's job when
roost.json names no profile for it). policy without options shows the policy in force (inside the concierge's job: the
policy it is held to). Standing orders are the concierge's to keep: every digest lists
them, and one on a clock is sent to it when due. Inside the concierge's job the order
commands are its own (`by: concierge`; it drops only its own, and marks one applied).
"""

import os

from roost.cli.context import ExitStatus


def _text(opts):
    return " ".join(opts["<text>"])


def _status_line(status):
    policy = status["policy"]
    state = f"on ({status['id']}, {status['state']})" if status["on"] else "off"
    return (f"concierge {state}; answer: {policy['answer']}, act: {str(policy['act']).lower()}; "
            f"{status['answered']} answered, {status['orders']} standing orders")


def main(opts, ctx):
    if opts["builtin"]:
        from roost.cli import builtin_concierge
        return builtin_concierge.main()
    if opts["on"]:
        return _on(opts, ctx)
    if opts["off"] or opts["status"]:
        result = ctx.call("concierge", {"action": "off" if opts["off"] else "status"})
        ctx.show(opts, result, _status_line(result))
    elif opts["ask"]:
        result = ctx.call("concierge-ask", {"text": _text(opts)})
        ctx.show(opts, result, "asked: its answer comes as a concierge event (roost events -f)")
    elif opts["policy"]:
        return _policy(opts, ctx)
    elif opts["orders"] or opts["order"]:
        return _orders(opts, ctx)
    elif opts["undo"]:
        ctx.show(opts, ctx.call("concierge", {"action": "undo"}), "its last answer is withdrawn")
    elif opts["say"]:
        kind = next(kind for kind in ("info", "need", "answer") if opts[kind])
        ctx.show(opts, ctx.call_as_job("concierge-say", {"kind": kind, "text": _text(opts)}), "said")
    elif opts["suggest"] or opts["reply"]:
        op = "concierge-suggest" if opts["suggest"] else "concierge-reply"
        args = {"id": opts["<id>"], "text": _text(opts)}
        if opts["--why"]:
            args["why"] = opts["--why"]
        result = ctx.call_as_job(op, args)
        ctx.show(opts, result, f"{'suggested to' if opts['suggest'] else 'answered'} {result['name']}")
    elif opts["act"]:
        what = "stop" if opts["stop"] else "respawn"
        args = {"what": what, "id": opts["<id>"]}
        if opts["--why"]:
            args["why"] = opts["--why"]
        result = ctx.call_as_job("concierge-act", args)
        ctx.show(opts, result, f"{what}: {result['name']}")
    return ExitStatus.OK


def _on(opts, ctx):
    args = {"action": "on"}
    words = opts["<command>"]
    if opts["--profile"] or words:
        args["launch"] = {"kind": "shell", "cwd": ctx.env.get("HOME") or os.getcwd(), "command": list(words),
                          "env": {}, "name": "", "sessionFile": "", "origin": "dispatch"}
        if opts["--profile"]:
            args["launch"]["profile"] = opts["--profile"]
    result = ctx.call("concierge", args)
    ctx.show(opts, result, _status_line(result))
    return ExitStatus.OK


def _policy(opts, ctx):
    if opts["--answer"] is None and opts["--act"] is None:
        if ctx.job_identity() is not None:
            result = ctx.call_as_job("concierge-policy", {})
            ctx.show(opts, result, f"answer: {result['answer']}, act: {str(result['act']).lower()}")
            return ExitStatus.OK
        result = ctx.call("concierge", {"action": "status"})
        ctx.show(opts, result, _status_line(result))
        return ExitStatus.OK
    result = None
    if opts["--answer"] is not None:
        result = ctx.call("concierge", {"action": "answer", "answer": opts["--answer"]})
    if opts["--act"] is not None:
        if opts["--act"] not in ("true", "false"):
            ctx.stderr.write("roost concierge policy: --act takes true or false\n")
            return ExitStatus.USAGE
        result = ctx.call("concierge", {"action": "act", "act": opts["--act"] == "true"})
    ctx.show(opts, result, _status_line(result))
    return ExitStatus.OK


def _orders(opts, ctx):
    if opts["add"]:
        args = {"action": "add", "text": _text(opts)}
        if opts["--when"]:
            args["when"] = opts["--when"]
    elif opts["rm"] or opts["applied"]:
        if not opts["<n>"].isdigit():
            ctx.stderr.write("roost concierge order: an order's number, as `orders` lists it\n")
            return ExitStatus.USAGE
        args = {"action": "rm" if opts["rm"] else "applied", "id": int(opts["<n>"])}
        if opts["applied"] and opts["<text>"]:
            args["text"] = _text(opts)
    else:
        args = {"action": "list"}
    # Inside a job it is that job's word (the concierge's own orders); a person's outside.
    call = ctx.call_as_job if ctx.job_identity() is not None else ctx.call
    result = call("concierge-order", args)
    lines = [f"#{order['id']} {order['when'] or 'in every digest'} (by {order['by']}, applied {order['count']}): "
             f"{order['text']}" for order in result["orders"]]
    ctx.show(opts, result, "\n".join(lines) or "no standing orders")
    return ExitStatus.OK
