"""A protocol agent (roost_agent.py) that reports what its session spent, as the spec's
`usage` report field says it: the session's cumulative figures {input, output,
cacheRead, cacheWrite, model}. A reply `spend IN OUT` adds IN input tokens (100 of them
cache reads) and OUT output; `new` starts a new session (its figures from 0 again)."""

import os
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import roost_agent  # noqa: E402

spent = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "model": "fake-model"}
done = threading.Event()


def on_reply(reply):
    words = reply.text.split()
    if words[:1] == ["spend"]:
        spent["input"] += int(words[1])
        spent["cacheRead"] += min(100, int(words[1]))
        spent["output"] += int(words[2])
    elif words[:1] == ["new"]:
        spent.update(input=0, output=0, cacheRead=0, cacheWrite=0)
    agent.report("blocked", summary=f"spent {spent['input']}", waiting_for="question", usage=dict(spent))


agent = roost_agent.RoostAgent.from_env("proto-spender", on_reply=on_reply, capabilities=["usage"])
agent.report("blocked", summary="ready", waiting_for="first-prompt")
done.wait()
