"""roost.args's helpers, for an op whose row has no contract yet (roost.ops): such an op
reads its arguments in its body with them. An op with a contract reads `call.args`,
checked before it runs; once no op reads these, this module and roost/args.py go."""

from roost.args import text, check_typed, flag, integer, number, strings, mapping, choice  # noqa: F401
