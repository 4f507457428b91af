"""roost_agent.py is one file any script copies: the rules it must keep, checked on its
source and by running it under bare interpreters (issue 4: standard library only,
Python 3.8, runs under `python3 -I -S`, writes nothing to stdout or stderr)."""

import ast
import os
import subprocess
import sys

import pytest

from conftest import ROOT
from protokit import interpreters

AGENT_FILE = os.path.join(ROOT, "roost_agent.py")


def source():
    with open(AGENT_FILE, encoding="utf-8") as handle:
        return handle.read()


def tree():
    return ast.parse(source(), filename=AGENT_FILE)


def imported_modules(module_tree):
    for node in ast.walk(module_tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name.split(".")[0], node.lineno
        elif isinstance(node, ast.ImportFrom):
            # A relative import would need a package around the file: there is none.
            yield ("." * node.level + (node.module or "")).split(".")[0] or ".", node.lineno


def test_it_imports_only_the_standard_library():
    outside = [(name, line) for name, line in imported_modules(tree())
               if name not in sys.stdlib_module_names]
    assert outside == [], f"roost_agent.py imports outside the standard library: {outside}"


def test_the_import_check_sees_a_foreign_import():
    # The rule above must be able to fail.
    names = [name for name, _ in imported_modules(ast.parse("import gevent\nfrom .x import y\nimport json"))]
    assert [name for name in names if name not in sys.stdlib_module_names] == ["gevent", "."]


def test_it_parses_as_python_3_8():
    ast.parse(source(), filename=AGENT_FILE, feature_version=(3, 8))
    with pytest.raises(SyntaxError):   # and the check knows 3.8 from newer grammar
        ast.parse("match x:\n    case 1:\n        pass\n", feature_version=(3, 8))


# Newer-than-3.8 names the grammar check cannot see (the interpreter test below runs the file
# under a real 3.8 where one is installed).
NEWER_THAN_3_8 = ("removeprefix", "removesuffix", "functools.cache", "zoneinfo", "graphlib",
                  "math.lcm", "str | None", "list[", "dict[", "tuple[", "set[")


def test_no_names_newer_than_3_8():
    text = source()
    assert [name for name in NEWER_THAN_3_8 if name in text] == []


# Its size (STYLE: modules aim under 400 lines, split by concern). This file is the one
# module that must stay one file, as a script copies it whole, so it has bounds of its own:
# - the file: 1100 lines. Whoever copies it should be able to read it in one sitting. It
#   holds about 1020: the job's agent, and since the peer ops a small second facade for a
#   process roost did not start (RoostPeer); another concern belongs in roost itself.
# - a class: 300 lines, so each part (the agent, its link, its deliveries) stays one
#   concern; the link, the largest, is under 280.
# - a function or method: 60 lines, one screen.
MAX_FILE_LINES = 1100
MAX_CLASS_LINES = 300
MAX_FUNCTION_LINES = 60


def definitions(node, prefix=""):
    """(qualified name, "class" or "function", first line, lines) of each class and function
    under `node`, nested ones too; a definition starts at its first decorator."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            first = min([child.lineno] + [decorator.lineno for decorator in child.decorator_list])
            kind = "class" if isinstance(child, ast.ClassDef) else "function"
            yield prefix + child.name, kind, first, child.end_lineno - first + 1
            yield from definitions(child, prefix + child.name + ".")
        else:
            yield from definitions(child, prefix)


def oversized(text):
    """What in `text` is over its bound: (what, lines, bound)."""
    found = []
    if len(text.splitlines()) > MAX_FILE_LINES:
        found.append(("the file", len(text.splitlines()), MAX_FILE_LINES))
    for name, kind, first, lines in definitions(ast.parse(text)):
        bound = MAX_CLASS_LINES if kind == "class" else MAX_FUNCTION_LINES
        if lines > bound:
            found.append(("%s %s (line %d)" % (kind, name, first), lines, bound))
    return found


def test_it_keeps_to_its_size_bounds():
    assert oversized(source()) == []


def function_of(name, lines, indent=""):
    """The source of a function exactly `lines` lines long."""
    return indent + "def %s():\n" % name + (indent + "    pass\n") * (lines - 1)


def test_the_size_check_sees_a_long_file_class_function_and_method():
    # The rule above must be able to fail, and not a line early.
    assert oversized(function_of("fits", MAX_FUNCTION_LINES)) == []
    big = "class Big:\n" + "".join(function_of("m%d" % number, 10, "    ")
                                    for number in range(MAX_CLASS_LINES // 10))   # 301 lines
    # A method at the bound, over it with its decorator (a definition starts there).
    small = "class Small:\n    @staticmethod\n" + function_of("grown", MAX_FUNCTION_LINES, "    ")
    sample = function_of("long", MAX_FUNCTION_LINES + 1) + big + small + "# more\n" * MAX_FILE_LINES
    assert oversized(sample) == [
        ("the file", len(sample.splitlines()), MAX_FILE_LINES),
        ("function long (line 1)", MAX_FUNCTION_LINES + 1, MAX_FUNCTION_LINES),
        ("class Big (line %d)" % (MAX_FUNCTION_LINES + 2), MAX_CLASS_LINES + 1, MAX_CLASS_LINES),
        ("function Small.grown (line %d)" % (MAX_FUNCTION_LINES + MAX_CLASS_LINES + 4),
         MAX_FUNCTION_LINES + 1, MAX_FUNCTION_LINES),
    ]


def writes_to_stdio(module_tree):
    found = []
    for node in ast.walk(module_tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("print", "input"):
            found.append((node.func.id, node.lineno))
        elif isinstance(node, ast.Attribute) and node.attr in (
                "stdout", "stderr", "__stdout__", "__stderr__", "print_exc", "print_exception",
                "print_stack", "basicConfig", "StreamHandler"):
            found.append((node.attr, node.lineno))
        elif isinstance(node, ast.Name) and node.id in ("StreamHandler", "basicConfig"):
            found.append((node.id, node.lineno))
    return found


def test_it_never_writes_to_stdout_or_stderr_itself():
    assert writes_to_stdio(tree()) == []


def test_the_stdio_check_sees_a_print():
    sample = "import sys, logging\nprint(1)\nsys.stderr.write('x')\nlogging.basicConfig()\n"
    assert sorted(name for name, _ in writes_to_stdio(ast.parse(sample))) == ["basicConfig", "print", "stderr"]


def test_its_logger_has_a_null_handler_and_nothing_else():
    script = ("import sys; sys.path.insert(0, %r); import logging, roost_agent; "
              "print([type(h).__name__ for h in logging.getLogger('roost_agent').handlers])" % ROOT)
    out = subprocess.run([sys.executable, "-I", "-S", "-c", script], env={}, capture_output=True, timeout=30)
    assert out.stdout.decode().strip() == "['NullHandler']", out.stderr


def run_isolated(python, code, env):
    """`python -I -S -c CODE` with only `env`: no site-packages, no user settings."""
    script = "import sys; sys.path.insert(0, %r)\n%s" % (ROOT, code)
    return subprocess.run([python, "-I", "-S", "-c", script], env=env, capture_output=True, timeout=60)


@pytest.mark.parametrize("python", interpreters())
def test_outside_a_job_from_env_is_none_under_a_bare_interpreter(python):
    out = run_isolated(python, "import roost_agent\nprint(roost_agent.RoostAgent.from_env('x') is None)", env={})
    assert out.returncode == 0, out.stderr.decode()
    assert out.stdout == b"True\n" and out.stderr == b""


@pytest.mark.parametrize("python", interpreters())
def test_a_job_without_a_daemon_runs_quietly_under_a_bare_interpreter(python, tmp_path):
    # Every thread's path up to the socket runs: report (connect, back off), a request that
    # is refused for want of a connection, close. Not one byte on stdout or stderr.
    code = (
        "import roost_agent\n"
        "agent = roost_agent.RoostAgent.from_env('quiet', version='1', on_reply=lambda r: None)\n"
        "assert agent is not None and agent.job_id == 'job-1'\n"
        "agent.report('blocked', question='which?', choices=['a', 'b'])\n"
        "try:\n"
        "    agent.request('task', {'action': 'list'}, timeout=0.2)\n"
        "except TimeoutError:\n"
        "    pass\n"
        "agent.close(timeout=0.3)\n"
        "try:\n"
        "    agent.request('task', {'action': 'list'})\n"
        "except roost_agent.RoostError as error:\n"
        "    assert error.code == 'disconnected'\n"
    )
    env = {"PI_JOB_ID": "job-1", "PI_JOB_TOKEN": "secret", "PI_DAEMON_SOCK": str(tmp_path / "none.sock"),
           "PI_JOB_DIR": str(tmp_path)}
    out = run_isolated(python, code, env=env)
    assert out.returncode == 0, out.stderr.decode()
    assert (out.stdout, out.stderr) == (b"", b"")


def test_new_variable_names_come_before_the_old_ones(tmp_path):
    sys.path.insert(0, ROOT)
    import roost_agent

    env = {"ROOST_JOB_ID": "new", "PI_JOB_ID": "old", "PI_JOB_TOKEN": "t", "PI_DAEMON_SOCK": "/x",
           "ROOST_JOB_DIR": str(tmp_path)}
    agent = roost_agent.RoostAgent.from_env("x", env=env)
    assert agent.job_id == "new" and agent._socket_path == "/x" and agent._job_dir == str(tmp_path)
    assert roost_agent.RoostAgent.from_env("x", env={"ROOST_JOB_ID": "j", "ROOST_SOCKET": "/x"}) is None
