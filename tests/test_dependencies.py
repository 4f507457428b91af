"""The dependencies by purpose (docs/dependencies.md): each library pinned exactly in the
file of its purpose, each with its reason in the table, and each run library really used
by roost. Each rule is a function of what it reads, so a planted violation shows it can
fail."""

import ast
import functools
import importlib.metadata
import os
import re
import sys

from conftest import ROOT

REQUIREMENTS = os.path.join(ROOT, "requirements")
PURPOSES = ("run", "build", "test")
DOC = os.path.join(ROOT, "docs", "dependencies.md")


def normal(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def pins(text):
    """{name: version} of a requirements file's own lines (-r lines left out); a line that
    is not an exact pin is kept with version None."""
    found = {}
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line or line.startswith("-r "):
            continue
        name, _, version = line.partition("==")
        found[normal(name)] = version.strip() or None
    return found


def read(name):
    with open(os.path.join(REQUIREMENTS, f"{name}.txt"), encoding="utf-8") as handle:
        return handle.read()


PINS = {purpose: pins(read(purpose)) for purpose in PURPOSES}


def doc_rows(text):
    """{purpose: names in its table}: the first cell of each table row under the heading
    that names the purpose's file."""
    rows, purpose = {}, None
    for line in text.splitlines():
        heading = re.match(r"## .*\(requirements/(\w+)\.txt\)", line)
        if heading:
            purpose = heading.group(1)
        elif line.startswith("## "):
            purpose = None
        elif purpose and line.startswith("| ") and not line.startswith("| library") and not line.startswith("|--"):
            cell = line.split("|")[1]
            rows.setdefault(purpose, set()).update(normal(name) for name in re.split(r",\s*", cell.strip()))
    return rows


def undocumented(pinned, rows):
    """(purpose, name) pinned without a row under its purpose, or with one and no pin."""
    problems = [(purpose, name) for purpose in PURPOSES for name in pinned[purpose]
                if name not in rows.get(purpose, set())]
    return problems + [(purpose, name) for purpose in PURPOSES for name in sorted(rows.get(purpose, set()))
                       if name not in pinned[purpose]]


def test_every_pin_is_exact():
    loose = [(purpose, name) for purpose in PURPOSES for name, version in PINS[purpose].items() if not version]
    assert loose == []


def test_requirements_txt_only_names_the_files_of_each_purpose():
    with open(os.path.join(ROOT, "requirements.txt"), encoding="utf-8") as handle:
        lines = [line.strip() for line in handle if line.strip() and not line.startswith("#")]
    assert lines == [f"-r requirements/{purpose}.txt" for purpose in PURPOSES]


def test_every_library_has_its_reason_in_the_table():
    with open(DOC, encoding="utf-8") as handle:
        assert undocumented(PINS, doc_rows(handle.read())) == []


def test_a_planted_pin_without_a_reason_breaks_the_table_rule():
    with open(DOC, encoding="utf-8") as handle:
        rows = doc_rows(handle.read())
    planted = {**PINS, "run": {**PINS["run"], "left-pad": "1.0"}}
    assert undocumented(planted, rows) == [("run", "left-pad")]


# -- what roost imports ---------------------------------------------------------------

@functools.cache
def roost_top_level_imports():
    """The top-level names of every module roost's package and roost_agent.py import."""
    found = set()
    paths = [os.path.join(ROOT, "roost_agent.py")]
    for directory, subdirs, files in os.walk(os.path.join(ROOT, "roost")):
        subdirs[:] = [name for name in subdirs if name != "__pycache__"]
        paths += [os.path.join(directory, name) for name in files if name.endswith(".py")]
    for path in paths:
        with open(path, encoding="utf-8") as handle:
            tree = ast.parse(handle.read())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                found.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                found.add(node.module.split(".")[0])
    return frozenset(found - {"roost", "roost_agent"} - set(sys.stdlib_module_names))


@functools.cache
def distributions_of_modules():
    return importlib.metadata.packages_distributions()


@functools.cache
def requires(name):
    """The distributions `name` requires (its metadata, extras left out)."""
    needed = set()
    try:
        lines = importlib.metadata.requires(name) or ()
    except importlib.metadata.PackageNotFoundError:
        return needed     # a requirement its markers leave out here (importlib-metadata on an old Python)
    for line in lines:
        if "extra ==" not in line:
            needed.add(normal(re.split(r"[\s;<>=!~\[(]", line, maxsplit=1)[0]))
    return needed


def unused_run_pins(run_pins, imported):
    """Run pins neither imported by roost nor required by another run pin (a library
    pinned, bundled and tested but used by nothing)."""
    by_module = distributions_of_modules()
    used = {normal(dist) for module in imported for dist in by_module.get(module, ())}
    return sorted(set(run_pins) - used - pulled_closure(used))


def pulled_closure(names):
    seen, stack = set(), list(names)
    while stack:
        for needed in requires(stack.pop()):
            if needed not in seen:
                seen.add(needed)
                stack.append(needed)
    return seen


def outside_the_run_set(run_pins, imported):
    """Libraries roost imports that no run pin provides: the binary would lack them."""
    by_module = distributions_of_modules()
    return sorted(module for module in imported
                  if not any(normal(dist) in run_pins for dist in by_module.get(module, ())))


def test_every_run_library_is_used_by_roost():
    assert unused_run_pins(PINS["run"], roost_top_level_imports()) == []


def test_a_planted_unused_run_library_breaks_the_rule():
    planted = {**PINS["run"], "pexpect": "4.9.0"}
    assert unused_run_pins(planted, roost_top_level_imports()) == ["pexpect"]


def test_what_roost_imports_is_in_the_run_set():
    assert outside_the_run_set(PINS["run"], roost_top_level_imports()) == []
    assert outside_the_run_set(PINS["run"], roost_top_level_imports() | {"pexpect"}) == ["pexpect"]
