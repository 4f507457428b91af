"""Codex's rollouts: `<CODEX_HOME>/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl`.

Codex writes `token_count` events whose `info.total_token_usage` is the session's
cumulative total; `last_token_usage` repeats within a turn, so summing it overcounts.
A rollout spent the largest cumulative total it reached, less what it inherited: a
fork's or a subagent's rollout (its `session_meta` says `forked_from_id`, or a
`subagent` source) starts at its parent's total, its first cumulative figure. Codex
0.171 also writes a `token_usage_record` per response (its `response_id`, its thread):
where a rollout has them, they are counted instead, each response once across files,
and only those of the rollout's own thread (a fork copies its parent's).

OpenAI's `input_tokens` includes the cached ones (`cached_input_tokens`) and the
written ones (`cache_write_input_tokens`); `output_tokens` includes reasoning: as
roost counts them. Each event's `rate_limits` (`used_percent`, `window_minutes`,
`resets_at`) is the plan's windows (roost.spend.windows).
"""

from roost import codec
from roost.spend import tokens
from roost.spend.ledger import response_key

_NEEDLES = (b'"token_count"', b'"session_meta"', b'"turn_context"', b'"token_usage_record"')


def keep(line):
    head = line[:160]     # each of these names its type near the line's start
    return any(needle in head for needle in _NEEDLES)


def _count(usage):
    if not isinstance(usage, dict):
        return None
    return [tokens.whole(usage.get("input_tokens")), tokens.whole(usage.get("output_tokens")),
            tokens.whole(usage.get("cached_input_tokens")), tokens.whole(usage.get("cache_write_input_tokens"))]


def take(ledger, line, state):
    """Count one rollout line into `ledger`; `state` is this file's (a dict kept in the
    ledger: own id, inherited, highest total, model, whether it has per-response
    records). Returns the rate_limits it carries ({"at", "limits"}) or None."""
    try:
        entry = codec.decode_record(line)
    except ValueError:
        return None
    if not isinstance(entry, dict) or not isinstance(entry.get("payload"), dict):
        return None
    kind, payload = entry.get("type"), entry["payload"]
    if kind == "session_meta":
        state.setdefault("own", payload.get("id"))
        source = payload.get("source")
        if payload.get("forked_from_id") or (isinstance(source, dict) and "subagent" in source):
            state["inherits"] = True
    elif kind == "turn_context":
        if isinstance(payload.get("model"), str):
            state["model"] = tokens.name(payload["model"])
    elif kind == "token_usage_record":
        state["records"] = True
        thread = payload.get("thread_id")
        count = _count(payload.get("usage"))
        if count is not None and isinstance(payload.get("response_id"), str) and thread in (None, state.get("own")):
            ledger.response(response_key("codex", payload["response_id"]), tokens.local_day(entry.get("timestamp")),
                            state.get("model") or "unknown", count)
    elif kind == "event_msg" and payload.get("type") == "token_count":
        info = payload.get("info")
        total = _count(info.get("total_token_usage")) if isinstance(info, dict) else None
        if total is not None:
            _cumulative(ledger, state, total, tokens.local_day(entry.get("timestamp")))
        limits = payload.get("rate_limits")
        if isinstance(limits, dict):
            return {"at": entry.get("timestamp"), "limits": limits}
    return None


def _cumulative(ledger, state, total, day):
    highest = state.get("highest")
    if highest is None:
        # The first cumulative figure: a fork or a subagent inherited it whole.
        state["highest"] = total if state.get("inherits") else tokens.zero()
        highest = state["highest"]
    grown = [max(0, now - before) for now, before in zip(total, highest)]
    if any(grown):
        state["highest"] = [max(now, before) for now, before in zip(total, highest)]
        if not state.get("records"):
            ledger.add(day, state.get("model") or "unknown", grown)
