"""Reading one argument in an op's body, for an op whose contract is not written yet:
each helper returns the value or raises bad_request with a sentence that names the
field. They are roost.contract's types used one field at a time; an op with a contract
in its row (roost.ops) receives its arguments checked and reads none of these."""

from roost import controls
from roost.contract import REQUIRED, Anything, Choice, Flag, Integer, ListOf, Number, Shape, Text
from roost.errors import bad_request

_MISSING = REQUIRED


def _read(field, args, name):
    return Shape({name: field}).check_fields(args)[name]


def text(args, name, default=_MISSING, min_length=0, trim=False, typed=None):
    """A string. `typed` (the words that name it, e.g. "reply text"): it will be typed
    into a terminal, so a control character in it is refused (issue 16)."""
    return _read(Text(min_length=min_length, trim=trim, typed=typed, default=default), args, name)


def check_typed(value, what):
    """Refuses text with a control character other than newline and tab: the one check
    for everything roost types into a terminal."""
    refused = controls.refusal(value, what)
    if refused:
        raise bad_request(refused)
    return value


def flag(args, name, default=False):
    return _read(Flag(default=default), args, name)


def integer(args, name, default=_MISSING, minimum=None, digits_ok=False, maximum=None):
    """An integer (bool refused); `digits_ok` also takes a string of digits (task ids)."""
    return _read(Integer(minimum=minimum, maximum=maximum, digits_ok=digits_ok, default=default), args, name)


def number(args, name, default=_MISSING):
    return _read(Number(default=default), args, name)


def strings(args, name, default=_MISSING):
    return _read(ListOf(Text(), default=default), args, name)


def mapping(args, name, default=_MISSING):
    return _read(Anything(object=True, default=default), args, name)


def choice(args, name, options, default=_MISSING):
    return _read(Choice(options, default=default), args, name)
