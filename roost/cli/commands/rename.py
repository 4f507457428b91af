"""Rename a job (spaces folded, at most 200 characters).

Usage:
  roost rename <id> <name>... [--json]
  roost rename --help

Options:
  --json  print the op's result as JSON
"""


def main(opts, ctx):
    result = ctx.call("rename", {"id": opts["<id>"], "name": " ".join(opts["<name>"])})
    ctx.show(opts, result, f"{result['id']} is now {result['name']}")
