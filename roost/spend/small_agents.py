"""pi's session files, aider's analytics log, and a protocol agent's `usage` report.

pi (measured on 0.73.1): `<session-dir>/<time>_<id>.jsonl`; each assistant `message`
entry has its own `id` and `message.usage` {input, output, cacheRead, cacheWrite}, where
`input` leaves the cache out (roost's `input` has it).

aider (measured on 0.86.2): `--analytics-log FILE` (the built-in profile gives it one in
the job's directory) gets a `message_send` line per exchange with aider's
`prompt_tokens` (cache writes included) and `completion_tokens`, and its `main_model`.
aider counts from the answer's usage when the answer carries one and with its own
tokenizer when it does not (a streamed answer through litellm does not): the figures are
aider's own. It gives no cache reads.

A protocol agent's `usage` report (the spec's report field): the session's cumulative figures
`{input, output, cacheRead, cacheWrite, model}`, `input` counted as roost counts it; a
figure lower than the last one is a new session's.
"""

from roost import codec
from roost.spend import tokens
from roost.spend.ledger import response_key


def pi_keep(line):
    return b'"usage"' in line


def pi_take(ledger, line, state=None):
    try:
        entry = codec.decode_record(line)
    except ValueError:
        return None
    if not isinstance(entry, dict) or entry.get("type") != "message":
        return None
    message = entry.get("message")
    if not isinstance(message, dict) or message.get("role") != "assistant" or not isinstance(entry.get("id"), str):
        return None
    usage = message.get("usage")
    if not isinstance(usage, dict):
        return None
    read, write = tokens.whole(usage.get("cacheRead")), tokens.whole(usage.get("cacheWrite"))
    count = [tokens.whole(usage.get("input")) + read + write, tokens.whole(usage.get("output")), read, write]
    model = tokens.name(message.get("model"))
    ledger.response(response_key("pi", entry["id"], message.get("responseId") or ""),
                    tokens.local_day(entry.get("timestamp")), model, count)
    return None


def aider_keep(line):
    return b'"message_send"' in line


def aider_take(ledger, line, state=None):
    try:
        entry = codec.decode_record(line)
    except ValueError:
        return None
    if not isinstance(entry, dict) or entry.get("event") != "message_send":
        return None
    properties = entry.get("properties")
    if not isinstance(properties, dict):
        return None
    model = tokens.name(properties.get("main_model"))
    when = entry.get("time")
    day = tokens.day_of_ms(when * 1000) if isinstance(when, (int, float)) and not isinstance(when, bool) else None
    ledger.add(day, model, [tokens.whole(properties.get("prompt_tokens")),
                            tokens.whole(properties.get("completion_tokens")), 0, 0])
    return None


def report_take(ledger, usage, day):
    """A report's `usage` counted into `ledger` (its growth since the last report)."""
    if not isinstance(usage, dict):
        return False
    count = tokens.from_dict(usage)
    model = tokens.name(usage.get("model"))
    last = ledger.report if isinstance(ledger.report, list) and len(ledger.report) == 4 else tokens.zero()
    if any(now < before for now, before in zip(count, last)):
        last = tokens.zero()      # a new session: its figures start again
    grown = [now - before for now, before in zip(count, last)]
    ledger.report = count
    if any(grown):
        ledger.add(day, model, grown)
        return True
    return False
