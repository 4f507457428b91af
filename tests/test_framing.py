"""What every request goes through (issue 21 item 3): the line framing, the codec and the
callers' check. Their fast paths (one split per read, the cheap scans before a value is
walked, one set lookup for an op free to its caller) must keep the limits and refusals
exactly."""

import pytest

from roost import codec, ops
from roost.errors import RoostError
from roost.framing import LineReader, LineTooLong
from roost.ops import callers


def test_lines_come_whole_in_order_across_reads():
    reader = LineReader(100)
    assert reader.lines(b'{"a":1}\n{"b"') == [b'{"a":1}']
    assert reader.pending == 4
    assert reader.lines(b":2}") == []
    assert reader.lines(b"\n\n{}\n") == [b'{"b":2}', b"{}"]
    assert reader.pending == 0


def test_a_carriage_return_before_the_end_is_dropped_and_blank_lines_are_skipped():
    reader = LineReader(100)
    assert reader.lines(b"one\r\n\r\n \t \n\n two \r\nthree\rx\n") == [b"one", b" two ", b"three\rx"]


def test_lines_are_bytes_whatever_the_reads_were():
    reader = LineReader(100)
    lines = reader.lines(bytearray(b"ab\ncd\n"))
    assert lines == [b"ab", b"cd"] and all(type(line) is bytes for line in lines)


@pytest.mark.parametrize("ending", [b"\n", b"\r\n"])
def test_a_line_of_exactly_the_limit_is_taken(ending):
    reader = LineReader(10)
    assert reader.lines(b"x" * 10 + b"\n") == [b"x" * 10]
    # the limit counts the line with its carriage return, as it always did
    if ending == b"\r\n":
        with pytest.raises(LineTooLong):
            reader.lines(b"x" * 10 + ending)


def test_a_line_one_over_the_limit_is_refused_even_among_short_ones():
    with pytest.raises(LineTooLong):
        LineReader(10).lines(b"short\n" + b"x" * 11 + b"\nshort\n")


def test_a_piece_of_a_line_over_the_limit_is_refused_before_its_end_comes():
    reader = LineReader(10)
    assert reader.lines(b"x" * 6) == []
    with pytest.raises(LineTooLong):
        reader.lines(b"x" * 5)
    reader = LineReader(10)
    with pytest.raises(LineTooLong):
        reader.lines(b"ok\n" + b"x" * 11)


def test_a_long_line_in_many_reads_is_taken_once_its_end_comes():
    reader = LineReader(1 << 20)
    piece = b"y" * 4096
    for _ in range(100):
        assert reader.lines(piece) == []
    assert reader.lines(b"\nnext") == [piece * 100]
    assert reader.pending == 4


@pytest.mark.parametrize("text", [
    "NaN", "[Infinity]", '{"a":-Infinity}', "1e400", "[1E999]", "1" + "0" * 400 + ".5",
    "18446744073709551616", "-9223372036854775808", '"\\ud800"', '{"\\uDBFF":1}', '["a\\udc00b"]',
    "[" * 65 + "]" * 65, '{"a":' * 65 + "1" + "}" * 65,
])
def test_decode_refuses_what_strict_json_has_not(text):
    with pytest.raises(ValueError):
        codec.decode(text)
    with pytest.raises(ValueError):
        codec.decode(text.encode())


@pytest.mark.parametrize("data", [b'"\xff"', b'"\xed\xa0\x80"', b'"\xc0\xaf"', b'{"a":"\xe2\x82"}'])
def test_decode_refuses_bytes_that_are_not_utf8(data):
    with pytest.raises(ValueError):
        codec.decode(data)


@pytest.mark.parametrize("text, value", [
    ("9223372036854775807", 2 ** 63 - 1), ("-9223372036854775807", -(2 ** 63 - 1)), ("1.5e3", 1500.0),
    ('{"text":"NaN and Infinity are words; 1e5 too"}', {"text": "NaN and Infinity are words; 1e5 too"}),
    ('"\\ud83d\\ude00"', "\U0001F600"), ("[" * 64 + "]" * 64, eval("[" * 64 + "]" * 64)),
    ('{"id":1,"op":"ping"}', {"id": 1, "op": "ping"}), ('"é/"', "é/"),
])
def test_decode_takes_strict_json(text, value):
    assert codec.decode(text) == value
    assert codec.decode(text.encode()) == value
    assert codec.decode(memoryview(text.encode())) == value


def test_encode_writes_what_the_standard_library_writes_and_refuses_what_json_has_not():
    assert codec.encode({"a": "é/<", "b": [1, 2.5, None, True]}) == '{"a":"é/<","b":[1,2.5,null,true]}'.encode()
    for value in (b"bytes", float("nan"), float("inf"), {"a": b"x"}):
        with pytest.raises((TypeError, OverflowError, ValueError)):
            codec.encode(value)


def test_an_op_the_fast_path_lets_through_is_one_check_lets_through_with_any_args():
    everyone = (callers.PERSON, callers.UNREGISTERED, callers.SESSION, callers.CONCIERGE, callers.IN_JOB)
    names = set(ops.load()) | set(callers.REFUSED) | {"no-such-op"}
    let_through = 0
    for name in names:
        for caller in everyone:
            if not callers.allowed(name, caller):
                continue
            let_through += 1
            for args in ({}, {"action": "merge"}, {"action": None}):
                callers.check(name, caller, args)      # raises if the fast path were wrong
    assert let_through > 50
    # and what it does not let through is still refused by the check itself
    assert not callers.allowed("dispatch", callers.IN_JOB)
    with pytest.raises(RoostError):
        callers.check("dispatch", callers.IN_JOB, {})
    assert not callers.allowed("task", callers.PERSON)      # an op with actions is always checked


def test_the_pinned_ujson_takes_the_positional_call_and_it_matches_the_keyword_form():
    import ujson

    assert codec.encode is codec._encode_positional
    value = {"path": "a/b", "text": "é <&> \u2028", "n": [0, -1, 1.25, 2 ** 63 - 1], "t": True, "z": None}
    assert codec.encode(value) == ujson.dumps(value, ensure_ascii=False, escape_forward_slashes=False,
                                              allow_nan=False, reject_bytes=True).encode()
