"""The regexes a job's screen is read with (roost.term.reading), behind one seam.

A pattern that came over the wire (`dispatch`'s and `spawn`'s `term`) runs on RE2, a
linear-time engine: Python's `re` backtracks, and one pattern such as `(a+)+b` over a
screen of `a`s would hold the daemon's loop for good (measured: 1.9 to 4.3 s for 24
characters, doubling with each one more; RE2 under 0.02 ms over a whole 120x40 screen). RE2 has no
lookaround and no backreference: a wire pattern that needs them is refused. The built-in
profiles' patterns and those of the user's own roost.json are the user's and roost's,
not a client's: they keep Python's `re` (they use lookaheads and `\\Z`).
"""

import re

import re2

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False          # a refused pattern is the op's answer, not a log line
# Python's `\Z` (the end of the text) is RE2's `\z`; an escaped backslash before Z is not it.
_END_OF_TEXT = re.compile(r"(?<!\\)((?:\\\\)*)\\Z")


class PatternError(ValueError):
    """The pattern cannot be compiled (its text says why)."""


class _Linear:
    """An RE2 pattern that says its `pattern` as it was given (what `roost explain` and
    the timeline show), not as translated for RE2."""

    __slots__ = ("_compiled", "pattern", "search", "finditer")

    def __init__(self, compiled, pattern):
        self._compiled = compiled
        self.pattern = pattern
        # What each reading of a screen calls, bound once: no lookup through __getattr__.
        self.search = compiled.search
        self.finditer = compiled.finditer

    def __getattr__(self, name):
        return getattr(self._compiled, name)


def linear(pattern):
    """A wire pattern, multi-line, on RE2; PatternError when RE2 cannot run it."""
    try:
        return _Linear(re2.compile("(?m)" + _END_OF_TEXT.sub(r"\1\\z", pattern), _OPTIONS), pattern)
    except re2.error as error:
        why = error.args[0] if error.args else error
        why = why.decode("utf-8", "replace") if isinstance(why, bytes) else str(why)
        raise PatternError(f"{why} (patterns given with a launch run on RE2: no lookaround, "
                           "no backreference)") from None


def trusted(pattern):
    """A profile's own pattern, multi-line, on Python's re; PatternError when invalid."""
    try:
        return re.compile(pattern, re.MULTILINE)
    except re.error as error:
        raise PatternError(str(error)) from None
