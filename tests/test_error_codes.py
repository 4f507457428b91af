"""Error codes are a closed set (roost.errors.CODES): every refusal roost makes names one
of them by its constant, never by a string of its own; and a code outside the set is
refused where the error is made."""

import ast
import os

import pytest

from conftest import ROOT
from roost import errors
from roost.errors import RoostError
from roost.git import errors as git_errors
from roost.ops import callers

# The constructors whose first argument is a code of the set.
MADE_WITH_A_CODE = ("RoostError", "Skipped")


def code_literals(source, path="<planted>"):
    """(path, line, what) for each error made with a code written as a string, or a
    constant that is not one of roost.errors'."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", None)
        if name not in MADE_WITH_A_CODE:
            continue
        for part in ast.walk(node.args[0]):
            if isinstance(part, ast.Constant) and isinstance(part.value, str):
                found.append((path, node.lineno, f"{name}({part.value!r}, ...): use roost.errors' constant"))
            elif isinstance(part, ast.Name) and part.id.isupper() and part.id not in vars(errors):
                found.append((path, node.lineno, f"{name}({part.id}, ...): not a code of roost.errors"))
    return found


def roost_sources():
    for directory, _, names in os.walk(os.path.join(ROOT, "roost")):
        for name in sorted(names):
            if name.endswith(".py"):
                path = os.path.join(directory, name)
                with open(path, encoding="utf-8") as handle:
                    yield os.path.relpath(path, ROOT), handle.read()


def test_every_error_is_made_with_a_code_of_the_closed_set():
    found = [problem for path, source in roost_sources() for problem in code_literals(source, path)]
    assert found == []


def test_a_planted_code_written_as_a_string_breaks_the_rule():
    planted = ('raise RoostError("nope", "x")\nraise Skipped("busy", "y")\nraise RoostError(WHATEVER, "z")\n'
               'raise RoostError(BUSY if x else "internal", "w")\n')
    assert [line for _, line, _ in code_literals(planted)] == [1, 2, 3, 4]
    assert code_literals("from roost.errors import BUSY\nraise RoostError(BUSY, 'x')\nraise RoostError(code, 'y')\n") == []


def test_a_code_outside_the_set_is_refused_where_it_is_made():
    with pytest.raises(ValueError):
        RoostError("teapot", "no such code")
    assert RoostError(errors.CONFLICT, "x").code == "conflict"


def test_the_spec_codes_are_the_set():
    # The spec's "Error codes", the others its ops name (M43, M45, M47), and roost's internal.
    assert set(errors.CODES) == {"bad_request", "unauthorized", "not_found", "full", "busy", "unsupported",
                                 "locked", "limit", "rate_limited", "too_long", "policy", "conflict", "blocked",
                                 "internal"}


def test_the_tables_that_name_codes_name_codes_of_the_set():
    assert set(git_errors.CODES.values()) <= set(errors.CODES)
    rules = list(callers.REFUSED.values()) + [rule for actions in callers.ACTIONS.values()
                                              for rule in actions.values()]
    named = {code for rule in rules for code in rule.values() if code is not None}
    assert named <= set(errors.CODES) and named
