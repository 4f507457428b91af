"""Claude Code's transcripts: `<config>/projects/<folder>/<sessionId>.jsonl` (and its
subagents' files under `<sessionId>/subagents/`), one JSON line per entry.

Claude Code writes one `assistant` line per content block of a response, each with the
response's `message.usage`: the input and cache figures repeat and `output_tokens`
grows, so only the last line of a `(message.id, requestId)` is final (a line without
`requestId` is keyed by `message.id` alone). A resumed or forked session copies earlier
lines into its new file: each response counts once (roost.spend.ledger). Measured on
Claude Code 2.1.197 (tests/fixtures/agents/claude-code/spend).

Claude Code's `input_tokens` leaves the cache out; roost's `input` has it:
input_tokens + cache_creation_input_tokens + cache_read_input_tokens.
"""

from roost import codec
from roost.spend import tokens
from roost.spend.ledger import response_key

# Lines that carry a response's usage; any other line is read past without parsing.
_NEEDLE = b'"usage"'
# Claude Code's own notes in the transcript (an API error shown as a message) name this
# model and spend nothing.
SYNTHETIC = "<synthetic>"


def keep(line):
    # From the end: Claude Code writes `usage` after a response's content, near a line's end.
    return line.rfind(_NEEDLE) >= 0 or line.rfind(b'"isApiErrorMessage"') >= 0


_REQUEST = b'"requestId":"'
_MESSAGE = b'"message":{"id":"'


def response_of(line):
    """The bytes that name a line's response (its message id and requestId), found
    without parsing, or None. Claude Code writes a response's lines one after another,
    each superseding the one before (roost.spend.readers parses only the last of such a
    run: two thirds of the parsing of a transcript). Both are found as JSON's own
    structure: inside a string every quote is escaped, so neither needle can match text.
    The requestId is looked for from the end, where Claude Code writes it."""
    request = line.rfind(_REQUEST)
    message = line.find(_MESSAGE)
    if request < 0 or message < 0:
        return None
    request += len(_REQUEST)
    message += len(_MESSAGE)
    return line[message:line.find(b'"', message)] + b"\x1f" + line[request:line.find(b'"', request)]


def take(ledger, line, file_state=None):
    """Count one transcript line into `ledger`; returns the rejection it records (a 429
    at a usage limit) as {"at": ISO time, "text": ...}, or None."""
    try:
        entry = codec.decode_record(line)
    except ValueError:
        return None
    if not isinstance(entry, dict) or entry.get("type") != "assistant":
        return None
    message = entry.get("message")
    if not isinstance(message, dict):
        return None
    usage = message.get("usage")
    model = message.get("model")
    if entry.get("isApiErrorMessage") or model == SYNTHETIC:
        return _rejection(entry, message)
    message_id = message.get("id")
    if not isinstance(usage, dict) or not isinstance(message_id, str):
        return None
    request_id = entry.get("requestId")
    key = response_key("claude", message_id, request_id) if isinstance(request_id, str) else \
        response_key("claude", message_id)
    read, write = tokens.whole(usage.get("cache_read_input_tokens")), tokens.whole(usage.get("cache_creation_input_tokens"))
    count = [tokens.whole(usage.get("input_tokens")) + read + write, tokens.whole(usage.get("output_tokens")), read, write]
    ledger.response(key, tokens.local_day(entry.get("timestamp")), tokens.name(model), count)
    return None


def _rejection(entry, message):
    """A usage limit's rejection as Claude Code records it: its error message line."""
    if entry.get("error") != "rate_limit" and entry.get("apiErrorStatus") != 429:
        return None
    text = ""
    for block in message.get("content") or ():
        if isinstance(block, dict) and isinstance(block.get("text"), str):
            text = block["text"]
            break
    return {"at": entry.get("timestamp"), "text": text[:200]}
