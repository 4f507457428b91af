"""The types of one value: Text, Choice, Flag, Integer, Number."""

import math
import re

from roost import controls
from roost.contract.field import MAX_INTEGER, Field
from roost.errors import BAD_REQUEST, RoostError, bad_request


class Text(Field):
    """A string. `typed` (the words that name it, e.g. "reply text"): it will be typed
    into a terminal, so a control character in it is refused (issue 16). `cut`: longer
    is cut to `max_length` rather than refused; `over`: the code of that refusal (the
    spec's `too_long` for a message; bad_request else). `pattern` (a regular expression the whole
    value matches) with `pattern_text`, what the refusal says."""

    plural = "strings"

    def __init__(self, doc=None, min_length=0, max_length=None, cut=False, trim=False, typed=None,
                 pattern=None, pattern_text=None, over=BAD_REQUEST, **kwargs):
        super().__init__(doc, **kwargs)
        self.over = over
        self.min_length = min_length
        self.max_length = max_length
        self.cut = cut
        self.trim = trim
        self.typed = typed
        self.pattern = re.compile(pattern) if pattern else None
        self.pattern_text = pattern_text

    def is_of(self, value):
        return isinstance(value, str)

    def check(self, value, name):
        if not isinstance(value, str):
            raise bad_request(f"{name} must be a string")
        if self.typed:
            refused = controls.refusal(value, self.typed)
            if refused:
                raise bad_request(refused)
        if self.trim:
            value = value.strip()
        if len(value) < self.min_length:
            raise bad_request(f"{name} must not be empty" if self.min_length == 1 else
                              f"{name} needs at least {self.min_length} characters")
        if self.max_length is not None and len(value) > self.max_length:
            if not self.cut:
                raise RoostError(self.over, f"{name} is at most {self.max_length} characters ({len(value)} given)")
            value = value[:self.max_length]
        if self.pattern is not None and not self.pattern.fullmatch(value):
            raise bad_request(self.pattern_text or f"{name} must match {self.pattern.pattern}")
        return value

    def _spec(self):
        return "string"

    def limit(self):
        words = []
        if self.min_length and self.max_length is not None:
            words.append(f"{self.min_length}-{self.max_length} chars")
        elif self.min_length:
            words.append(f">= {self.min_length} chars")
        elif self.max_length is not None:
            words.append(f"<= {self.max_length} chars")
        if self.trim:
            words.append("(trimmed)")
        if self.max_length is not None:
            words.append(", longer is cut" if self.cut else
                         ", longer is refused" + (f" (`{self.over}`)" if self.over != BAD_REQUEST else ""))
        if self.pattern is not None:
            words.append(f"`{self.pattern.pattern}`")
        if self.typed:
            words.append("no control characters but newline and tab")
        return " ".join(words).replace(" ,", ",")


class Choice(Text):
    """One of a few strings."""

    def __init__(self, options, doc=None, **kwargs):
        super().__init__(doc, **kwargs)
        self.options = tuple(options)

    def is_of(self, value):
        return value in self.options

    def check(self, value, name):
        value = super().check(value, name)
        if value not in self.options:
            raise bad_request(f"{name} must be one of {', '.join(self.options)}" + (" or null" if self.nullable else ""))
        return value

    def _spec(self):
        return " | ".join(f'"{option}"' for option in self.options)

    def limit(self):
        return ""


class Flag(Field):
    plural = "true or false"

    def is_of(self, value):
        return isinstance(value, bool)

    def check(self, value, name):
        if not isinstance(value, bool):
            raise bad_request(f"{name} must be true or false")
        return value

    def _spec(self):
        return "boolean"


class Integer(Field):
    """An integer (true and false are not); `digits_ok` also takes a string of digits
    (a task's id); a float with no fraction is taken as the integer it is."""

    plural = "integers"

    def __init__(self, doc=None, minimum=None, maximum=None, digits_ok=False, **kwargs):
        super().__init__(doc, **kwargs)
        self.minimum = minimum
        self.maximum = maximum
        self.digits_ok = digits_ok

    def is_of(self, value):
        return isinstance(value, int) and not isinstance(value, bool) and -MAX_INTEGER <= value <= MAX_INTEGER

    def check(self, value, name):
        if self.digits_ok and isinstance(value, str) and value.isdigit():
            value = int(value)
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise bad_request(f"{name} must be an integer")
        if not -MAX_INTEGER <= value <= MAX_INTEGER:
            raise bad_request(f"{name} must be an integer of at most 64 bits")
        if self.minimum is not None and value < self.minimum:
            raise bad_request(f"{name} must be at least {self.minimum}")
        if self.maximum is not None and value > self.maximum:
            raise bad_request(f"{name} must be at most {self.maximum}")
        return value

    def _spec(self):
        return "integer" + (" | string" if self.digits_ok else "")

    def _typescript(self):
        return "number" + (" | string" if self.digits_ok else "")

    def limit(self):
        if self.minimum is not None and self.maximum is not None:
            return f"{self.minimum}-{self.maximum}"
        if self.minimum is not None:
            return f">= {self.minimum}"
        return f"<= {self.maximum}" if self.maximum is not None else ""


class Number(Field):
    """A number: an integer of at most 64 bits, or a finite float."""

    plural = "numbers"

    def __init__(self, doc=None, minimum=None, **kwargs):
        super().__init__(doc, **kwargs)
        self.minimum = minimum

    def is_of(self, value):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return False
        return math.isfinite(value) if isinstance(value, float) else -MAX_INTEGER <= value <= MAX_INTEGER

    def check(self, value, name):
        if not self.is_of(value):
            raise bad_request(f"{name} must be a number")
        if self.minimum is not None and value < self.minimum:
            raise bad_request(f"{name} must be at least {self.minimum}")
        return value

    def _spec(self):
        return "number"

    def limit(self):
        return f">= {self.minimum}" if self.minimum is not None else ""
