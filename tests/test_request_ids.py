"""Issue 28: every well-formed request is answered with its own id, whatever its numbers.
A line the codec refuses (an integer past 64 bits, a number no double holds, a lone
surrogate, nesting past 64 levels) that is JSON all the same is read by the standard
library's decoder for its id; its op's contract then checks its arguments, and what
roost cannot hold is refused, naming where it is, with that id. A line that is not a
JSON object at all is answered with id null, as before."""

import json
import math
import socket

import pytest

BIG = 2 ** 63               # one past what roost holds
HUGE = 10 ** 30


def exchange(daemon, *lines):
    """Each line's answer, on one raw connection, then a ping's on the same one."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(30)
    sock.connect(daemon.socket)
    with sock, sock.makefile("rb") as reader:
        answers = []
        for line in lines + (b'{"id": "after", "op": "ping"}',):
            sock.sendall(line + b"\n")
            answers.append(json.loads(reader.readline()))
    assert answers[-1]["ok"] and answers[-1]["id"] == "after"
    return answers[:-1]


def test_a_flag_past_64_bits_is_refused_with_its_own_id_naming_the_field(daemon):
    [answer] = exchange(daemon, b'{"id": 3, "op": "list", "args": {"all": 9223372036854775808}}')
    assert (answer["id"], answer["ok"], answer["code"]) == (3, False, "bad_request")
    assert answer["error"] == "all must be true or false"


@pytest.mark.parametrize("number", [BIG, HUGE, -HUGE])
@pytest.mark.parametrize("where", ["an unknown field", "a declared integer", "an object taken whole",
                                   "a list", "the id"])
def test_a_number_past_64_bits_anywhere_is_answered_with_its_own_id(daemon, number, where):
    request = {
        "an unknown field": {"id": 3, "op": "list", "args": {"extra": number}},
        "a declared integer": {"id": 3, "op": "events", "args": {"limit": number}},
        "an object taken whole": {"id": 3, "op": "doctor", "args": {"env": {"A": number}}},
        "a list": {"id": 3, "op": "reorder", "args": {"ids": [number], "key": "k"}},
        "the id": {"id": number, "op": "ping"},
    }[where]
    [answer] = exchange(daemon, json.dumps(request).encode())
    assert answer["id"] == request["id"] and answer["ok"] is False and answer["code"] == "bad_request", answer
    named = {"an unknown field": "extra", "a declared integer": "limit", "an object taken whole": "env",
             "a list": "ids", "the id": "id"}[where]
    assert named in answer["error"], answer


def test_a_number_no_double_holds_is_answered_with_its_id_as_sent(daemon):
    overflowing = exchange(daemon, b'{"id": 1e400, "op": "ping"}', b'{"id": 4, "op": "list", "args": {"x": 1e400}}')
    assert math.isinf(overflowing[0]["id"]) and overflowing[0]["code"] == "bad_request"
    assert overflowing[1]["id"] == 4 and "x: a number too large for a double" in overflowing[1]["error"]


def test_what_roost_holds_is_taken_as_before(daemon):
    edge, big_id = exchange(daemon, b'{"id": 9223372036854775807, "op": "ping"}',
                            b'{"id": 5, "op": "list", "args": {"all": true, "extra": 9223372036854775807}}')
    assert edge["ok"] is True and edge["id"] == 2 ** 63 - 1
    assert big_id["ok"] is True and big_id["id"] == 5


@pytest.mark.parametrize("line", [b'{"id": 6, "op": "ping", "args": {"a": NaN}}', b'{"id": 6, "op": "ping"',
                                  b'{"id": 6, "op": "ping", "args": {"a": "\xff"}}', b'[6]'])
def test_a_line_that_is_not_a_json_object_is_answered_with_id_null(daemon, line):
    [answer] = exchange(daemon, line)
    assert answer["id"] is None and answer["code"] == "bad_request"
