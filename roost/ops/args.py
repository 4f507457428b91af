"""The ops read their arguments with roost.args (the launcher below the ops reads a
DispatchArgs with the same helpers)."""

from roost.args import choice, flag, integer, mapping, number, strings, text  # noqa: F401
