"""The benches, the release's helpers and the scripts drive roost's modules directly, and
none of them runs in the suite: every name they take from roost must be where they look
for it, or a module moved inside the house breaks a bench only on the day it runs."""

import ast
import glob
import importlib
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUTSIDE = sorted(glob.glob(os.path.join(ROOT, "bench", "*.py")) + glob.glob(os.path.join(ROOT, "packaging", "*.py"))
                 + glob.glob(os.path.join(ROOT, "packaging", "hooks", "*.py")))


def _is_roost(name):
    return name == "roost" or name.startswith("roost.")


def names_taken(source):
    """(dotted name, line) for each name of roost a source takes: what it imports, and
    each attribute it reads of what it imported."""
    tree = ast.parse(source)
    aliases, taken = {}, []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and _is_roost(node.module):
            for alias in node.names:
                taken.append((f"{node.module}.{alias.name}", node.lineno))
                aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if _is_roost(alias.name):
                    taken.append((alias.name, node.lineno))
                    aliases[alias.asname or alias.name.split(".")[0]] = alias.asname and alias.name or "roost"
    for node in ast.walk(tree):
        chain, base = [], node
        while isinstance(base, ast.Attribute):
            chain.insert(0, base.attr)
            base = base.value
        if chain and isinstance(base, ast.Name) and base.id in aliases:
            taken.append((".".join([aliases[base.id]] + chain), node.lineno))
    return taken


def resolve(dotted):
    """The module or the object a dotted name of roost names: the longest part of it
    that imports, then attributes; AttributeError or ImportError when there is none."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError as error:
            if not ".".join(parts[:cut]).startswith(error.name or "\0"):
                raise       # a module of roost that imports what is not there
            continue
        for name in parts[cut:]:
            found = getattr(found, name)
        return found
    raise ImportError(dotted)


def missing(source):
    gone = []
    for dotted, line in names_taken(source):
        try:
            resolve(dotted)
        except (AttributeError, ImportError):
            gone.append((dotted, line))
    return gone


@pytest.mark.parametrize("path", OUTSIDE, ids=lambda path: os.path.relpath(path, ROOT))
def test_every_name_taken_from_roost_is_there(path):
    with open(path, encoding="utf-8") as handle:
        assert missing(handle.read()) == []


def test_a_planted_name_that_moved_is_found():
    source = ("from roost import keeper as keeper_module\n"
              "from roost.keeper.spawn import spawn_on_pty\n"
              "from roost.keeper import no_such_part\n"
              "import roost.codec\n"
              "keeper_module.spawn_on_pty([], {}, '/', 0, 1, 1)\n"
              "roost.codec.encode({})\n"
              "roost.codec.no_such_function()\n")
    assert missing(source) == [("roost.keeper.no_such_part", 3), ("roost.keeper.spawn_on_pty", 5),
                               ("roost.codec.no_such_function", 7)]
    assert len(OUTSIDE) > 10
