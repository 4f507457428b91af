"""The types an op's contract is written in: each checks a value that came over the wire
(`check`: the value to use, or bad_request naming the field), tells whether a value the
daemon sends is of it (`problems`, for the contract tests), and says what it is (`spec`,
in the spec's notation; `typescript`; `limit`), so docs/protocol.md and the TypeScript
check read the same rows the daemon checks with.

    Shape({"id": Text(min_length=1), "lines": Integer(minimum=1, default=None)})

A field is required unless it has a default (`default=None`, or `optional=True` for a
result's field that may be absent); JSON null counts as absent unless the field is
`nullable`. `LEFT_OUT` as a default keeps an absent field out of the checked arguments
(where absent and null mean different things). Fields a shape does not name are dropped
from what the op receives (the spec: unknown fields are ignored).

A leaf beside roost.errors: the ops and the domain below them (a launch's DispatchArgs)
both use it.
"""

from roost.contract.field import LEFT_OUT, MAX_INTEGER, REQUIRED, Field  # noqa: F401
from roost.contract.scalars import Choice, Flag, Integer, Number, Text  # noqa: F401
from roost.contract.shapes import NO_ARGS, Anything, ListOf, MapOf, Shape  # noqa: F401
