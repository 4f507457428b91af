"""What happened across the jobs, oldest first: starts, state changes that matter,
replies, messages, reports, notices, restarts, removals. -f follows as it happens, like
`tail -f` (Ctrl-c ends it).

Usage:
  roost events [--job=ID] [-n N] [-f] [--json]
  roost events --help

Options:
  --job=ID   only what is about that job, or what it caused
  -n N       the last N events [default: 20]
  -f         follow: print each new event as it happens
  --json     print the op's result as JSON (with -f: one event a line)
"""

import json
import signal
import time

from roost.cli.context import ExitStatus
from roost.client.connection import Refused


def line(event):
    at = time.strftime("%H:%M:%S", time.localtime(event["at"] / 1000))
    name = event.get("name") or "roost"
    who = f" (by {event['who']})" if event.get("who") else ""
    return f"{event['seq']:>6}  {at}  {name[:24]:<24}  {event['text']}{who}"


def main(opts, ctx):
    try:
        count = int(opts["-n"])
    except ValueError:
        count = -1
    if count < 0:
        ctx.stderr.write("roost events: -n takes a number, 0 or more\n")
        return ExitStatus.USAGE
    args = {"limit": count}
    if opts["--job"]:
        args["id"] = opts["--job"]
    if not opts["-f"]:
        result = ctx.call("events", args)
        ctx.show(opts, result, "\n".join(line(event) for event in result["events"]) or "nothing happened yet")
        return ExitStatus.OK
    return follow(opts, ctx, args)


class _Interrupts:
    """Ctrl-C while a line is being written ends the follow once it is written: a
    KeyboardInterrupt inside a write to a pipe can leave the stream half-flushed, and the
    exit then fails on it."""

    def __init__(self):
        self.writing = False
        self.asked = False

    def __call__(self, signum, frame):
        if self.writing:
            self.asked = True
        else:
            raise KeyboardInterrupt

    def show(self, opts, ctx, event):
        self.writing = True
        try:
            show(opts, ctx, event)
        finally:
            self.writing = False
        if self.asked:
            raise KeyboardInterrupt


def follow(opts, ctx, args):
    client = ctx.client()
    interrupts = _Interrupts()
    try:
        previous = signal.signal(signal.SIGINT, interrupts)
    except ValueError:          # not the main thread (a test's caller): as before
        previous = None
    try:
        client.call("subscribe")          # pushes from here on; then what came before
        result = client.call("events", args)
        cursor = result["cursor"]
        for event in result["events"]:
            interrupts.show(opts, ctx, event)
        job = _job_id(client, args.get("id"))
        while True:
            message = client.next_event()
            if message.get("event") != "feed":
                continue
            event = message["entry"]
            if event["seq"] <= cursor:
                continue
            cursor = event["seq"]
            if job is None or job in (event.get("id"), event.get("whoId")):
                interrupts.show(opts, ctx, event)
    except KeyboardInterrupt:
        return ExitStatus.OK
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
        client.close()


def _job_id(client, query):
    """--job as the daemon knows it (an id, a prefix or a name); a removed job's id as given."""
    if query is None:
        return None
    try:
        return client.call("resolve", {"query": query})["id"]
    except Refused:
        return query


def show(opts, ctx, event):
    if opts["--json"]:
        ctx.say_as_is(json.dumps(event, ensure_ascii=False))
    else:
        ctx.say(line(event))
    ctx.stdout.flush()
