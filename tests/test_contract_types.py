"""roost.contract's types on their own: what each takes, what it refuses (bad_request
naming the field), what it says it is, and what it finds wrong in an answer."""

import pytest

from roost.contract import LEFT_OUT, Anything, Choice, Flag, Integer, ListOf, MapOf, Number, Shape, Text
from roost.errors import RoostError


def refusal(shape, args):
    with pytest.raises(RoostError) as caught:
        shape.check_fields(args)
    assert caught.value.code == "bad_request"
    return caught.value.text


def test_required_fields_defaults_and_null():
    shape = Shape({"id": Text(min_length=1), "lines": Integer(minimum=1, default=None), "all": Flag(default=False)})
    assert shape.check_fields({"id": "a"}) == {"id": "a", "lines": None, "all": False}
    assert shape.check_fields({"id": "a", "lines": None, "all": None, "extra": 1}) == {"id": "a", "lines": None,
                                                                                       "all": False}
    assert refusal(shape, {}) == "id is required"
    assert refusal(shape, {"id": None}) == "id is required"
    assert refusal(shape, {"id": ""}) == "id must not be empty"
    assert refusal(shape, {"id": "a", "lines": 0}) == "lines must be at least 1"
    assert refusal(shape, {"id": "a", "all": 1}) == "all must be true or false"


def test_a_default_list_is_a_new_list_each_time():
    shape = Shape({"command": ListOf(Text(), default=[])})
    first = shape.check_fields({})["command"]
    first.append("x")
    assert shape.check_fields({})["command"] == []


def test_left_out_and_nullable_keep_absent_and_null_apart():
    shape = Shape({"project": Text(nullable=True, default=LEFT_OUT)})
    assert shape.check_fields({}) == {}
    assert shape.check_fields({"project": None}) == {"project": None}
    assert shape.check_fields({"project": "/p"}) == {"project": "/p"}


def test_text():
    assert Text(trim=True, min_length=1).check("  a ", "t") == "a"
    assert Text(max_length=3, cut=True).check("abcdef", "t") == "abc"
    with pytest.raises(RoostError, match="t is at most 3 characters"):
        Text(max_length=3).check("abcd", "t")
    with pytest.raises(RoostError, match="reply text has a control character U\\+001B"):
        Text(typed="reply text").check("a\x1b[201~", "text")
    assert Text(typed="reply text").check("a\nb\tc", "text") == "a\nb\tc"
    with pytest.raises(RoostError, match="requestId must be 1-64"):
        Text(pattern=r"[a-z]{1,64}", pattern_text="requestId must be 1-64 of a-z").check("A", "requestId")
    with pytest.raises(RoostError, match="t must be a string"):
        Text().check(3, "t")


def test_choice_says_null_when_null_is_one():
    assert Choice(("a", "b")).check("a", "c") == "a"
    with pytest.raises(RoostError, match="^c must be one of a, b$"):
        Choice(("a", "b")).check("z", "c")
    with pytest.raises(RoostError, match="^c must be one of a, b or null$"):
        Choice(("a", "b"), nullable=True).check("z", "c")


def test_integers_and_numbers_hold_64_bits_at_most():
    assert Integer().check(3.0, "n") == 3
    assert Integer(digits_ok=True).check("12", "id") == 12
    for wrong in (True, "3", 1.5, [1]):
        with pytest.raises(RoostError, match="n must be an integer"):
            Integer().check(wrong, "n")
    with pytest.raises(RoostError, match="64 bits"):
        Integer().check(2 ** 63, "n")
    assert Integer().check(2 ** 63 - 1, "n") == 2 ** 63 - 1
    assert Number().check(1.5, "n") == 1.5
    for wrong in (float("inf"), float("nan"), 10 ** 30, True, "1"):
        with pytest.raises(RoostError, match="n must be a number"):
            Number().check(wrong, "n")


def test_lists_and_maps():
    strings = ListOf(Text())
    assert strings.check(["a"], "command") == ["a"]
    with pytest.raises(RoostError, match="^command must be a list of strings$"):
        strings.check(["a", 1], "command")
    with pytest.raises(RoostError, match="^command must be a list of strings$"):
        strings.check("a", "command")
    assert ListOf(Text(), drop_others=True).check(["a", 1, None, "b"], "c") == ["a", "b"]
    ids = ListOf(Integer(minimum=1, digits_ok=True), what="a list of task ids", max_items=2,
                 too_many="{name} names at most {max} tasks ({given} given)")
    assert ids.check([1, "2"], "after") == [1, 2]
    with pytest.raises(RoostError, match="^after names at most 2 tasks \\(3 given\\)$"):
        ids.check([1, 2, 3], "after")
    with pytest.raises(RoostError, match="^after\\[0\\] must be at least 1$"):
        ids.check([0], "after")
    env = MapOf(Text())
    assert env.check({"A": "1"}, "env") == {"A": "1"}
    with pytest.raises(RoostError, match="^env values must be strings$"):
        env.check({"A": 1}, "env")


def test_a_nested_shape_names_its_fields_with_its_prefix():
    report = Shape({"state": Choice(("working", "done"))}, prefix="report.")
    outer = Shape({"report": report})
    with pytest.raises(RoostError, match="^report.state must be one of working, done$"):
        outer.check_fields({"report": {"state": "x"}})
    with pytest.raises(RoostError, match="^report must be an object$"):
        outer.check_fields({"report": []})


def test_a_lenient_field_takes_another_type_as_absent():
    shape = Shape({"agent": Anything(object=True, default=None, lenient=True)})
    assert shape.check_fields({"agent": 3}) == {"agent": None}
    assert shape.check_fields({"agent": {"name": "a"}}) == {"agent": {"name": "a"}}


def test_what_an_answer_has_wrong():
    row = Shape({"id": Text(), "pid": Integer(nullable=True), "task": Text(optional=True),
                 "tags": ListOf(Text())}, name="Row")
    assert row.problems({"id": "a", "pid": None, "tags": []}, "result") == []
    assert row.problems({"id": 1, "tags": ["a", 2], "other": 1}, "result") == [
        "result.id is not string: 1", "result.pid is missing", "result.tags[1] is not string: 2",
        "result.other is not in its contract"]
    assert Shape({}, open=True).problems({"anything": 1}, "result") == []


def test_how_the_types_are_written():
    assert Choice(("a", "b"), nullable=True).spec() == '"a" | "b" | null'
    assert ListOf(Choice(("a", "b"))).spec() == '("a" | "b")[]'
    assert Shape({"a": Integer(), "b": Text(default=None)}).spec() == "{ a: integer, b?: string }"
    assert Shape({"a": Integer()}).typescript() == "{ a: number }"
    assert Shape({}, name="JobRow").spec() == "JobRow"
    assert MapOf(Text()).typescript() == "Record<string, string>"
    assert Text(min_length=1, trim=True).limit() == ">= 1 chars (trimmed)"
    assert Text(max_length=2000, cut=True).limit() == "<= 2000 chars, longer is cut"
    assert Integer(minimum=1, maximum=1000).limit() == "1-1000"
