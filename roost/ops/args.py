"""The ops read their arguments with roost.args (the launcher below the ops reads a
DispatchArgs with the same helpers)."""

from roost.args import text, check_typed, flag, integer, number, strings, mapping, choice  # noqa: F401
