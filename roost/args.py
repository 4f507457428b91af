"""Reading a request's arguments (the ops', and the launcher's DispatchArgs): each helper
returns the value or raises bad_request with a sentence that names the field."""

from roost import controls
from roost.errors import bad_request

_MISSING = object()


def _absent(name, default):
    """What an absent (or null) argument stands for: its default, or a refusal."""
    if default is _MISSING:
        raise bad_request(f"{name} is required")
    return default


def text(args, name, default=_MISSING, min_length=0, trim=False, typed=None):
    """A string. `typed` (the words that name it, e.g. "reply text"): it will be typed
    into a terminal, so a control character in it is refused (issue 16), at its index in
    the text as given."""
    value = args.get(name)
    if value is None:
        return _absent(name, default)
    if not isinstance(value, str):
        raise bad_request(f"{name} must be a string")
    if typed:
        check_typed(value, typed)
    if trim:
        value = value.strip()
    if len(value) < min_length:
        raise bad_request(f"{name} must not be empty" if min_length == 1 else
                          f"{name} needs at least {min_length} characters")
    return value


def check_typed(value, what):
    """Refuses text with a control character other than newline and tab: the one check
    for everything roost types into a terminal."""
    refused = controls.refusal(value, what)
    if refused:
        raise bad_request(refused)
    return value


def flag(args, name, default=False):
    value = args.get(name, None)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise bad_request(f"{name} must be true or false")
    return value


def integer(args, name, default=_MISSING, minimum=None, digits_ok=False, maximum=None):
    """An integer (bool refused); `digits_ok` also takes a string of digits (task ids)."""
    value = args.get(name)
    if value is None:
        return _absent(name, default)
    if digits_ok and isinstance(value, str) and value.isdigit():
        value = int(value)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise bad_request(f"{name} must be an integer")
    if minimum is not None and value < minimum:
        raise bad_request(f"{name} must be at least {minimum}")
    if maximum is not None and value > maximum:
        raise bad_request(f"{name} must be at most {maximum}")
    return value


def number(args, name, default=_MISSING):
    value = args.get(name)
    if value is None:
        return _absent(name, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise bad_request(f"{name} must be a number")
    return value


def strings(args, name, default=_MISSING):
    value = args.get(name)
    if value is None:
        return _absent(name, default)
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise bad_request(f"{name} must be a list of strings")
    return value


def mapping(args, name, default=_MISSING):
    value = args.get(name)
    if value is None:
        return _absent(name, default)
    if not isinstance(value, dict):
        raise bad_request(f"{name} must be an object")
    return value


def choice(args, name, options, default=_MISSING):
    value = text(args, name, default)
    if value is not default and value not in options:
        raise bad_request(f"{name} must be one of {', '.join(options)}")
    return value
