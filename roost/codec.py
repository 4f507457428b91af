"""JSON on the wire and on disk, behind one seam so the codec can be swapped.

ujson by default escapes '/' and non-ASCII; we turn both off so its bytes match the
standard library's (and roost_agent.py's) output.
"""

import json
import re

import ujson

# ujson.loads accepts NaN, Infinity and numbers that overflow (1e999, and a long plain
# decimal such as 1 and 400 zeros and ".5", both inf); strict JSON has none of them. A long
# integer it keeps exact, of any size: no number of the protocol needs more than 64 bits,
# and past them it would overflow wherever it meets a float or a C integer (a size, a
# timeout), so it is refused too. It also decodes an escaped lone surrogate ("\ud800")
# into a string that is not Unicode: it could not be encoded again (an answer, a row, a
# state file). A cheap scan decides whether the slower walk is needed at all.
# NaN and Infinity are looked for with `in` (a str's is a few tens of ns; the regular
# expression costs more than the rest of a small request's decoding did).
_SUSPECT = re.compile(r"[0-9](?:[eE]|[0-9]{18})")
MAX_INTEGER = 2 ** 63 - 1
_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")


def _encode_positional(value):
    """One value as UTF-8 JSON bytes (no trailing newline). Bytes are refused (ujson's
    default, reject_bytes), as are NaN and Infinity."""
    return ujson.dumps(value, False, False, False, False, 0, False).encode("utf-8")


def _encode_by_name(value):
    """One value as UTF-8 JSON bytes (no trailing newline). Bytes are refused (ujson's
    default, reject_bytes), as are NaN and Infinity."""
    return ujson.dumps(value, ensure_ascii=False, escape_forward_slashes=False, allow_nan=False).encode("utf-8")


def _choose_encode():
    """ujson.dumps called positionally: ujson parses keywords by name on every call, which
    cost about as much as encoding a small answer (every answer and event comes through
    here). Its positional order (obj, ensure_ascii, encode_html_chars,
    escape_forward_slashes, sort_keys, indent, allow_nan) is checked once against the
    keyword form; a ujson that orders them otherwise gets the keyword form."""
    probe = {"a": "é/<&>", "b": [1, 2.5, None, True], "c": {"d": ""}}
    try:
        if _encode_positional(probe) != _encode_by_name(probe):
            return _encode_by_name
    except TypeError:
        return _encode_by_name
    try:
        _encode_positional(float("nan"))
    except (ValueError, OverflowError):
        return _encode_positional
    return _encode_by_name


encode = _choose_encode()


def encode_pretty(value):
    return ujson.dumps(value, ensure_ascii=False, escape_forward_slashes=False,
                       allow_nan=False, indent=2, reject_bytes=True)


def decode(data):
    """Bytes or str to a value; ValueError for anything that is not strict JSON."""
    if isinstance(data, str):
        value = ujson.loads(data)
    else:
        # Invalid UTF-8 must be refused, not replaced: decode strictly first (ujson
        # would take an encoded surrogate from bytes). ujson is handed the bytes when
        # they are ASCII (nothing there to refuse): given a str, it first asks for a
        # buffer and builds the TypeError of its refusal, a third of a small request's
        # decoding.
        raw = data
        data = str(raw, "utf-8")
        value = ujson.loads(raw if type(raw) is bytes and raw.isascii() else data)
    suspect = "NaN" in data or "Infinity" in data or _SUSPECT.search(data) is not None
    surrogates = "\\u" in data and _SURROGATE.search(data) is not None
    # No document shorter than 2 * (MAX_DEPTH + 1) can nest deeper than MAX_DEPTH.
    if suspect or surrogates or (len(data) > 2 * MAX_DEPTH + 1 and data.count("[") + data.count("{") > MAX_DEPTH):
        _check(value, suspect, surrogates)
    return value


def decode_record(data):
    """An agent's record line (roost.spend) to a value, without the wire's strict walk:
    a gigabyte of transcripts is read for a few numbers and names, each checked where it
    is taken (a whole number, a short printable name), and none of it is encoded again
    as it came. The walk cost twice the parse there (measured on Claude Code's lines,
    whose hex ids look like exponents to the cheap scan). ValueError for what is not
    JSON."""
    return ujson.loads(data)


# No message of the protocol nests deeper than a handful of levels; anything deeper is
# refused before code that recurses (repr, logging) can meet it.
MAX_DEPTH = 64


def _check(value, finite_too, strings_too):
    # Iterative: ujson allows nesting 1024 deep, more than Python's recursion wants.
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, float):
            if finite_too and (item != item or item in (float("inf"), float("-inf"))):
                raise ValueError("NaN and Infinity are not JSON (nor a number too large for a double)")
        elif isinstance(item, int):
            if finite_too and not -MAX_INTEGER <= item <= MAX_INTEGER:
                raise ValueError(f"an integer beyond 64 bits (one of {item.bit_length()} bits)")
        elif isinstance(item, str):
            if strings_too:
                _check_unicode(item)
        elif isinstance(item, RawNumber):
            raise ValueError(f"a number too large for a double ({item.text[:40]} reads as Infinity)")
        elif isinstance(item, (dict, list)):
            if depth > MAX_DEPTH:
                raise ValueError(f"nested deeper than {MAX_DEPTH} levels")
            if isinstance(item, dict):
                if strings_too:
                    for key in item:
                        _check_unicode(key)
                children = item.values()
            else:
                children = item
            stack.extend((child, depth + 1) for child in children)


class RawNumber:
    """A number of a line read by `decode_loosely` that no double can hold (1e400): kept
    as its text, so that an answer can carry it back as the client wrote it."""

    __slots__ = ("text",)

    def __init__(self, text):
        self.text = text

    def __repr__(self):
        return self.text


def _float(text):
    value = float(text)
    return value if value not in (float("inf"), float("-inf")) else RawNumber(text)


def _no_constants(name):
    raise ValueError(f"{name} is not JSON")


def decode_loosely(data):
    """A line `decode` refused, read by the standard library's decoder when it is JSON at
    all (strict UTF-8, no NaN or Infinity): its values as they are (an integer of any
    size, a lone surrogate, nesting past MAX_DEPTH), a number no double holds as a
    RawNumber; None when it is not JSON. The server reads a request's id from it, so that
    every well-formed request is answered with its own id, whatever its numbers."""
    try:
        text = data if isinstance(data, str) else str(data, "utf-8")
        return json.loads(text, parse_float=_float, parse_constant=_no_constants)
    except (ValueError, RecursionError):
        return None


def as_json(value):
    """`value` (from `decode_loosely`) written back as JSON text, exactly as given for a
    RawNumber; a lone surrogate as its escape."""
    if isinstance(value, RawNumber):
        return value.text
    return json.dumps(value)


def unholdable(value):
    """Why `value` (decoded by the standard library from a line `decode` refused) cannot
    be held as roost holds a request's values, or None when it can."""
    try:
        _check(value, True, True)
    except ValueError as error:
        return str(error)
    return None


def _check_unicode(text):
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("a string holds a lone surrogate (\\ud800-\\udfff): it is not Unicode") from None
