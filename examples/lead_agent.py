#!/usr/bin/env python3
"""lead_agent: hands its task to a helper session and waits for it. Given a task (its
first reply), it sends it to the session named in its argv (default "helper"), watches
that session until it is idle again, and reports done with what the helper's row says.

    {"agentProfiles": {"lead": {"command": ["python3", "/path/to/lead_agent.py", "helper"],
                                "task": "type", "protocol": true}}}

    roost run --profile helper --name helper
    roost run --profile lead "write the release notes"

roost_agent.py must sit beside this file (`roost agent-file DIR` writes it).
"""

import sys
import threading
import time

from roost_agent import RoostAgent, RoostError


def main():
    helper = sys.argv[1] if len(sys.argv) > 1 else "helper"

    def on_reply(reply):
        try:
            sent = agent.send(helper, reply.text)
        except RoostError as error:
            agent.report("failed", error="could not hand the task over: %s" % error)
            return
        agent.report("working", summary="%s has it (%s); waiting for it" % (sent["name"], sent["outcome"]))
        # A watch for idle fires at once on a session that is idle already: wait until
        # the helper is at work on it, then watch for its next stop.
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not any(
                peer["id"] == sent["id"] and peer["state"] == "working" for peer in agent.peers()):
            time.sleep(0.05)
        agent.watch(sent["id"], "idle")

    def on_message(message):
        if message.kind == "notice":      # the watch fired: the helper is idle again
            rows = [peer for peer in agent.peers() if peer["name"] == helper]
            summary = rows[0]["summary"] if rows else "the helper is gone"
            agent.report("done", summary="%s: %s" % (helper, summary))

    agent = RoostAgent.from_env("lead", version="1.0", on_reply=on_reply, on_message=on_message)
    if agent is None:
        print("lead_agent: not inside a roost job; run it from a roost profile with \"protocol\": true")
        return 0
    agent.report("blocked", summary="waiting for a task to hand over")
    threading.Event().wait()   # it runs until roost stops it


if __name__ == "__main__":
    sys.exit(main())
