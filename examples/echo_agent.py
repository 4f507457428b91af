#!/usr/bin/env python3
"""echo_agent: the smallest agent built on roost_agent.py. It answers each reply by
reporting it back (the row reads "echo: <text>") and waits for the next one; a reply of
"bye" ends it.

Run it as a roost job from a profile in roost.json:

    {"agentProfiles": {"echo": {"command": ["python3", "/path/to/echo_agent.py"],
                                "task": "type", "protocol": true}}}

    roost run --profile echo "hello"      # the task comes as the first reply
    roost reply <job> "and this too"

roost_agent.py must sit beside this file (`roost agent-file DIR` writes it). Outside a
roost job it prints a one-line hint and exits 0.
"""

import sys
import threading

from roost_agent import RoostAgent


def main():
    finished = threading.Event()

    def on_reply(reply):
        if reply.text.strip().lower() == "bye":
            finished.set()   # main() says goodbye; its close() waits for this handler and its ack
            return
        agent.report("blocked", summary="echo: " + reply.text)

    agent = RoostAgent.from_env("echo", version="1.0", on_reply=on_reply)
    if agent is None:
        print("echo_agent: not inside a roost job; run it from a roost profile with \"protocol\": true")
        return 0
    agent.report("blocked", summary="waiting for something to echo")
    while not finished.wait(1.0):
        pass
    agent.report("done", summary="bye")
    agent.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
