"""The project's rules, checked on its source (dulwich's test_source pattern): each test
states a rule and lists its exceptions with the reason."""

import ast
import os
import re
import sys

from conftest import ROOT

PACKAGE = os.path.join(ROOT, "roost")


def modules():
    for directory, _, files in os.walk(PACKAGE):
        for name in sorted(files):
            if name.endswith(".py"):
                path = os.path.join(directory, name)
                dotted = os.path.relpath(path, ROOT)[:-3].replace(os.sep, ".")
                yield dotted.removesuffix(".__init__"), path


def imports(dotted, path, top_level_only=False):
    """The absolute names a module imports (relative imports resolved)."""
    tree = ast.parse(open(path, encoding="utf-8").read())
    package = dotted if path.endswith("__init__.py") else dotted.rsplit(".", 1)[0]
    nodes = tree.body if top_level_only else ast.walk(tree)
    found = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                prefix = ".".join(base + ([node.module] if node.module else []))
                found.update(f"{prefix}.{alias.name}" if not node.module else prefix for alias in node.names)
                if not node.module:
                    found.update(f"{prefix}.{alias.name}" for alias in node.names)
            else:
                found.add(node.module)
    return found


def named(found, *prefixes):
    return sorted(name for name in found for prefix in prefixes if name == prefix or name.startswith(prefix + "."))


TOP = ("roost.daemon", "roost.cli", "roost.commands", "roost.__main__")
OPS = ("roost.ops",)
SERVER = ("roost.server",)


def test_layers_call_downward_only():
    """wire/server -> ops -> domain -> OS. The daemon and the CLI compose; nothing below
    them imports them, the domain never imports the ops or the server, ops never the server."""
    problems = []
    for dotted, path in modules():
        found = imports(dotted, path)
        if dotted.startswith(TOP):
            continue
        if dotted == "roost.server":
            problems += [(dotted, name) for name in named(found, *TOP)]
        elif dotted.startswith(OPS):
            problems += [(dotted, name) for name in named(found, *TOP, *SERVER)]
        else:
            problems += [(dotted, name) for name in named(found, *TOP, *SERVER, *OPS)]
    assert problems == []


KEEPER_SIDE = ("roost.keeper", "roost.keeper_exit", "roost.keeper_main", "roost.keeper_wire", "roost.private_socket",
               "roost.pty_spawn", "roost.pidlock")


def test_the_keeper_uses_the_standard_library_only():
    """The keeper is rarely restarted and must not depend on gevent or ujson."""
    for dotted in KEEPER_SIDE:
        path = os.path.join(ROOT, *dotted.split(".")) + ".py"
        outside = [name for name in imports(dotted, path)
                   if not name.startswith(KEEPER_SIDE) and name.split(".")[0] not in sys.stdlib_module_names]
        assert outside == [], dotted


CLI_PATH = ["roost", "roost.cli", "roost.client", "roost.paths", "roost.userenv", "roost.bundle",
            "roost.commands"] + [f"roost.commands.{name[:-3]}" for name in os.listdir(os.path.join(PACKAGE, "commands"))
                                  if name.endswith(".py") and name not in ("__init__.py", "daemon.py")]
HEAVY = ("gevent", "dulwich", "pexpect", "pyte", "ujson")


def test_the_cli_path_imports_nothing_heavy():
    """`roost list` must start fast: the CLI's modules import no heavy library at all
    (commands/daemon.py is the exception: `--foreground` is the daemon)."""
    for dotted in CLI_PATH:
        path = os.path.join(ROOT, *dotted.split("."))
        path = path + "/__init__.py" if os.path.isdir(path) else path + ".py"
        assert named(imports(dotted, path), *HEAVY) == [], dotted


def source_files():
    for _, path in modules():
        yield path, open(path, encoding="utf-8").read()


def test_gevent_is_patched_in_one_place():
    where = [os.path.relpath(path, ROOT) for path, text in source_files() if "patch_all" in text]
    assert where == ["roost/patching.py"]


def test_no_shell_strings():
    pattern = re.compile(r"shell\s*=\s*True|os\.system\(|os\.popen\(")
    assert [os.path.relpath(path, ROOT) for path, text in source_files() if pattern.search(text)] == []


def test_no_print_in_roost():
    """The daemon logs; the CLI writes through its context (testable, never a stray print)."""
    pattern = re.compile(r"^\s*print\(", re.MULTILINE)
    assert [os.path.relpath(path, ROOT) for path, text in source_files() if pattern.search(text)] == []


# Modules allowed past the size aim, and why.
LONG_ON_PURPOSE = {}
MAX_LINES = 450


def test_modules_stay_small():
    long = {os.path.relpath(path, ROOT): text.count("\n") for path, text in source_files()
            if text.count("\n") > MAX_LINES}
    assert {path: lines for path, lines in long.items() if path not in LONG_ON_PURPOSE} == {}
