"""What every type of roost.contract has: required or not, its default, null."""

import copy

MAX_INTEGER = 2 ** 63 - 1     # no number of the protocol needs more (roost.codec)


class _Marker:
    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return self.name


REQUIRED = _Marker("REQUIRED")
LEFT_OUT = _Marker("LEFT_OUT")


class Field:
    """One value's type. `doc`: a line for the reference; `lenient`: a value of another
    type is taken as absent rather than refused (where the spec says it is ignored)."""

    plural = "values"

    def __init__(self, doc=None, default=REQUIRED, optional=False, nullable=False, lenient=False):
        if optional and default is REQUIRED:
            default = None
        self.doc = doc
        self.default = default
        self.nullable = nullable
        self.lenient = lenient

    def but(self, **changes):
        """A copy with other settings: `default=None`, `optional=True`, `doc=...`."""
        changed = copy.copy(self)
        if changes.pop("optional", False) and changes.get("default", self.default) is REQUIRED:
            changes["default"] = None
        for name, value in changes.items():
            if not hasattr(changed, name):
                raise TypeError(f"{type(self).__name__} has no {name}")
            setattr(changed, name, value)
        return changed

    @property
    def required(self):
        return self.default is REQUIRED

    def is_of(self, value):
        """The value is of this type, limits aside."""
        raise NotImplementedError

    def check(self, value, name):
        """`value` (not None) as the op receives it; bad_request naming `name` if it is not."""
        raise NotImplementedError

    def problems(self, value, where):
        """What is wrong with a value the daemon sends as this type (its answers)."""
        if value is None:
            return [] if self.nullable else [f"{where} is null"]
        return [] if self.is_of(value) else [f"{where} is not {self.spec()}: {_sample(value)}"]

    def spec(self):
        """The type in the spec's notation (`string`, `integer`, `"a" | "b"`, ...)."""
        return self._spec() + (" | null" if self.nullable else "")

    def typescript(self):
        return self._typescript() + (" | null" if self.nullable else "")

    def _spec(self):
        raise NotImplementedError

    def _typescript(self):
        return self._spec()

    def limit(self):
        """The limits the check applies, in words ("" for none)."""
        return ""


def _sample(value):
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
