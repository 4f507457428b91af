#!/usr/bin/env python3
"""ask_agent: an agent that asks a question with choices and acts on the answer.

It asks which greeting to write, offering "hello", "good morning" and "nothing". The
answer (a choice's text or its number, from `roost reply`) is acted on: the greeting is
written to FILE (default: greeting.txt in the job's working directory) and the agent
reports done with what it did. Any other answer is asked again.

    ask_agent.py [FILE]

Run it as a roost job from a profile in roost.json:

    {"agentProfiles": {"ask": {"command": ["python3", "/path/to/ask_agent.py"], "protocol": true}}}

roost_agent.py must sit beside this file (`roost agent-file DIR` writes it). Outside a
roost job it prints a one-line hint and exits 0.
"""

import os
import sys
import threading

from roost_agent import RoostAgent

QUESTION = "Which greeting should I write?"
CHOICES = ["hello", "good morning", "nothing"]


def pick(text):
    """The choice an answer names (its text or its number), or None."""
    answer = text.strip().lower()
    if answer.isdigit() and 1 <= int(answer) <= len(CHOICES):
        return CHOICES[int(answer) - 1]
    return answer if answer in CHOICES else None


def write_greeting(path, greeting):
    temp = path + ".tmp"
    with open(temp, "w", encoding="utf-8") as handle:
        handle.write(greeting + "\n")
    os.replace(temp, path)


def main(argv):
    path = os.path.abspath(argv[0] if argv else "greeting.txt")
    outcome = []
    finished = threading.Event()

    def on_reply(reply):
        choice = pick(reply.text)
        if choice is None:
            agent.report("blocked", summary="%r is not one of the choices" % reply.text[:60],
                         question=QUESTION, choices=CHOICES)
            return
        if choice == "nothing":
            outcome.append("wrote nothing, as asked")
        else:
            agent.report("working", summary="writing %s" % os.path.basename(path))
            write_greeting(path, choice)
            outcome.append("wrote %r to %s" % (choice, path))
        finished.set()   # main() reports done; its close() waits for this handler and its ack

    agent = RoostAgent.from_env("ask", version="1.0", on_reply=on_reply)
    if agent is None:
        print("ask_agent: not inside a roost job; run it from a roost profile with \"protocol\": true")
        return 0
    agent.report("blocked", summary="asks which greeting to write", question=QUESTION, choices=CHOICES)
    while not finished.wait(1.0):
        pass
    agent.report("done", summary=outcome[0])
    agent.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
