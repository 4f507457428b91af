"""Records as the agents write them, for the spend tests: Claude Code's transcript lines,
Codex's rollout events, pi's entries, aider's analytics lines (the shapes of
tests/fixtures/agents/*/spend, measured on the pinned versions); and, on a real daemon,
the profiles of tests/agents/spends.py and the waits for a row's spend."""

import json
import os

from jobkit import agent, dispatch, wait_row, write_config

from roost.spend import claude_code, codex, small_agents
from roost.spend.follow import LineFollower
from roost.spend.ledger import Ledger

READERS = {"claude-code": (claude_code.keep, claude_code.take), "codex": (codex.keep, codex.take),
           "pi": (small_agents.pi_keep, small_agents.pi_take), "aider": (small_agents.aider_keep, small_agents.aider_take)}


def claude_line(message_id, request_id, output, input=100, read=1000, write=50, model="claude-opus-4-8",
                at="2026-12-06T06:53:18.260Z", block="text", session="s1"):
    entry = {"parentUuid": None, "isSidechain": False, "type": "assistant", "sessionId": session, "timestamp": at,
             "message": {"id": message_id, "type": "message", "role": "assistant", "model": model,
                         "content": [{"type": block, "text": "x"}],
                         "usage": {"input_tokens": input, "cache_creation_input_tokens": write,
                                   "cache_read_input_tokens": read, "output_tokens": output,
                                   "service_tier": "standard"}}}
    if request_id is not None:
        entry["requestId"] = request_id
    return json.dumps(entry)


def codex_meta(own, forked_from=None, parent_thread=None):
    payload = {"id": own, "session_id": own, "cwd": "/w", "cli_version": "0.171.0", "source": "cli"}
    if forked_from:
        payload["forked_from_id"] = forked_from
    if parent_thread:
        payload["source"] = {"subagent": {"thread_spawn": {"parent_thread_id": parent_thread, "depth": 1}}}
    return json.dumps({"timestamp": "2026-12-06T06:52:20.973Z", "type": "session_meta", "payload": payload})


def codex_turn(model="gpt-5.5"):
    return json.dumps({"timestamp": "2026-12-06T06:52:21.022Z", "type": "turn_context",
                       "payload": {"turn_id": "t", "model": model, "cwd": "/w"}})


def usage(input, output, cached=0, written=0, reasoning=0):
    return {"input_tokens": input, "cached_input_tokens": cached, "cache_write_input_tokens": written,
            "output_tokens": output, "reasoning_output_tokens": reasoning, "total_tokens": input + output}


def codex_count(total, last, limits=None, at="2026-12-06T06:52:21.108Z"):
    payload = {"type": "token_count", "info": {"total_token_usage": total, "last_token_usage": last,
                                               "model_context_window": 258400}, "rate_limits": limits}
    return json.dumps({"timestamp": at, "type": "event_msg", "payload": payload})


def codex_record(thread, response, use, at="2026-12-06T06:52:21.107Z"):
    return json.dumps({"timestamp": at, "type": "token_usage_record",
                       "payload": {"thread_id": thread, "session_id": thread, "response_id": response, "usage": use}})


def write_lines(path, lines, mode="w"):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, mode, encoding="utf-8") as handle:
        for line in lines:
            handle.write(line + "\n")
    return path


def read_files(kind, paths, ledger=None):
    """A ledger that read `paths` in order, as the daemon's tracker reads them."""
    ledger = ledger or Ledger()
    keep, take = READERS[kind]
    for path in paths:
        state = ledger.files.setdefault(path, {"state": {}})["state"]
        LineFollower(path).read(lambda line: take(ledger, line, state), keep)
    return ledger


def totals(ledger):
    whole, by_model = ledger.totals()
    return whole, {model: count for model, count in by_model.items() if any(count)}


# -- on a real daemon: tests/agents/spends.py as Claude Code, or as Codex ----------------

TERM = {"settleMs": 150, "waiting": r"^> ?$"}


def profile(**extra):
    return dict({"command": agent("spends.py", "--session-id", "{sessionId}"), "task": "type", "term": TERM,
                 "provider": "anthropic", "spendFrom": "claude-code", "interrupt": ["Escape"]}, **extra)


def agent_homes(daemon):
    """Where the fake agents keep their records (CLAUDE_CONFIG_DIR, CODEX_HOME), beside
    the daemon's home, outside every job's folder."""
    base = os.path.dirname(daemon.home)
    return os.path.join(base, "claude"), os.path.join(base, "codex")


def homes_sandbox(daemon):
    """roost.json's `sandbox` that lets a jailed fake agent write its records there, as a
    user grants a real agent's home (a trailing `/`: made when missing)."""
    return {"write": [folder + "/" for folder in agent_homes(daemon)]}


def start(daemon, cwd, config=None, name="", **extra):
    os.makedirs(cwd, exist_ok=True)
    claude, _ = agent_homes(daemon)
    write_config(daemon.home, dict({"agentProfiles": {"spender": profile()}, "sandbox": homes_sandbox(daemon)},
                                   **(config or {})))
    return dispatch(daemon, [], cwd=str(cwd), profile="spender", name=name,
                    env={"CLAUDE_CONFIG_DIR": claude}, **extra)


def waits(daemon, job_id):
    return wait_row(daemon, job_id, lambda current: current["status"] == "waiting", what="the prompt")


def spend_of(daemon, job_id, tokens_input):
    return wait_row(daemon, job_id, lambda current: (current.get("spend") or {}).get("tokens", {}).get("input")
                    == tokens_input, what=f"the row's spend to reach input {tokens_input}")["spend"]


CODEX_ROLLOUT = r"/sessions/\d{4}/\d{2}/\d{2}/rollout-[^/]*-(?P<id>[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.jsonl$"
