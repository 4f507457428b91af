#!/usr/bin/env python3
"""helper_agent: takes work from other sessions. Each message it gets (from a lead, say)
is "done" a moment later: it reports the work, then waits for the next one. Its hello
says agent-items, so other sessions see it in `peers` and may `send` to it.

    {"agentProfiles": {"helper": {"command": ["python3", "/path/to/helper_agent.py"],
                                  "protocol": true}}}

roost_agent.py must sit beside this file (`roost agent-file DIR` writes it).
"""

import sys
import threading
import time

from roost_agent import RoostAgent


def last_line(text):
    """A message comes in roost's envelope: its own text follows the envelope's line,
    each of its lines quoted after "> "."""
    line = text.strip().splitlines()[-1] if text.strip() else ""
    return line[2:] if line.startswith("> ") else line


def main():
    def on_message(message):
        work = last_line(message.text)
        agent.report("working", summary="working on: " + work)
        time.sleep(0.5)      # the work itself
        agent.report("blocked", summary="did: " + work)

    agent = RoostAgent.from_env("helper", version="1.0", on_reply=lambda reply: None, on_message=on_message)
    if agent is None:
        print("helper_agent: not inside a roost job; run it from a roost profile with \"protocol\": true")
        return 0
    agent.report("blocked", summary="waiting for work from another session")
    threading.Event().wait()   # it runs until roost stops it


if __name__ == "__main__":
    sys.exit(main())
