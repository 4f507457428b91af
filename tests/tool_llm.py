"""A fake model that also calls a named tool: the real agents' kit's `fake_llm.py` (loaded
from the path given first), with one more knob in the prompt, for tests of an agent's own
tools (roost's, in pi):

  call: NAME {JSON}   the first answer is a call of the tool NAME (when the request offers
                      it) with those arguments ({} when none are given); once the request
                      carries its result, the answer is "RESULT: " and the result's first line.

Every request's log line also carries `toolResult` (the text of the tool result it ends
with, or null), `toolSpecs` ({name: {description, parameters}} of the tools it offers) and
`system` (its system prompt).

    python3 tool_llm.py /path/to/fake_llm.py --port 0 --log FILE
"""

import importlib.util
import json
import re
import sys
import threading

CALL = re.compile(r"call:\s*([A-Za-z0-9_.-]+)[ \t]*(\{.*\})?", re.S)

_extra = threading.local()


def load(path):
    spec = importlib.util.spec_from_file_location("fake_llm", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def last_tool_result(body, fake):
    """The text of the tool result the request ends with, or None."""
    if not fake.last_is_tool_result(body):
        return None
    last = (body.get("messages") or [None])[-1]
    return fake._text_of(last.get("content")) if isinstance(last, dict) else None


def tool_specs(body):
    specs = {}
    for tool in body.get("tools") or []:
        function = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(function, dict) and function.get("name"):
            specs[function["name"]] = {"description": function.get("description"),
                                       "parameters": function.get("parameters")}
    return specs


def system_prompt(body, fake):
    return "\n".join(fake._text_of(message.get("content")) for message in body.get("messages") or []
                     if isinstance(message, dict) and message.get("role") in ("system", "developer"))


def patch(fake):
    plan, choose, log = fake.plan_tool_call, fake.choose_reply, fake.log

    def plan_tool_call(body, user):
        match = CALL.search(user)
        if not match:
            return plan(body, user)
        if fake.last_is_tool_result(body) or match.group(1) not in fake.tool_names(body):
            return None
        return match.group(1), json.loads(match.group(2) or "{}")

    def choose_reply(body):
        reply, delay, user = choose(body)
        result = last_tool_result(body, fake)
        _extra.fields = {"toolResult": result, "toolSpecs": tool_specs(body), "system": system_prompt(body, fake)}
        if result is not None and CALL.search(user):
            reply = "RESULT: " + (result.strip().splitlines() or [""])[0]
        return reply, delay, user

    def log_with_extra(entry):
        if entry.get("method") == "POST":
            entry.update(getattr(_extra, "fields", None) or {})
            _extra.fields = None
        log(entry)

    fake.plan_tool_call, fake.choose_reply, fake.log = plan_tool_call, choose_reply, log_with_extra


def main():
    fake = load(sys.argv[1])
    patch(fake)
    sys.argv = [sys.argv[1]] + sys.argv[2:]
    fake.main()


if __name__ == "__main__":
    main()
