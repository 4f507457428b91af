"""The project's rules, checked on its source (dulwich's test_source pattern): each test
states a rule and lists its exceptions with the reason. Each rule is a function of the
modules it reads, so a planted violation shows that the rule can fail."""

import ast
import os
import re
import sys

import pytest

from conftest import ROOT

PACKAGE = os.path.join(ROOT, "roost")


class Module:
    """One module of the tree: its dotted name, its package and the roost modules and
    libraries it imports (relative imports resolved)."""

    def __init__(self, dotted, source, is_package=False):
        self.dotted = dotted
        self.source = source
        self.is_package = is_package
        self.package = dotted if is_package else dotted.rsplit(".", 1)[0]
        self.tree = ast.parse(source)
        self.imports = _imports(self.tree, self.package)

    @property
    def lines(self):
        return self.source.count("\n")


def _imports(tree, package):
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module
            found.add(module)
            # `from roost.jobs import runner` imports the module roost.jobs.runner
            found.update(f"{module}.{alias.name}" for alias in node.names)
    return found


def tree_modules():
    found = []
    for directory, subdirs, files in os.walk(PACKAGE):
        subdirs[:] = sorted(name for name in subdirs if name != "__pycache__")
        for name in sorted(files):
            if name.endswith(".py"):
                path = os.path.join(directory, name)
                dotted = os.path.relpath(path, ROOT)[:-3].replace(os.sep, ".").removesuffix(".__init__")
                with open(path, encoding="utf-8") as handle:
                    found.append(Module(dotted, handle.read(), name == "__init__.py"))
    return found


MODULES = tree_modules()
NAMES = {module.dotted for module in MODULES}


def roost_imports(module):
    """The roost modules `module` imports (names that are not modules, like a class
    imported from one, are dropped)."""
    return sorted(name for name in module.imports if name in NAMES and name != module.dotted)


def within(name, *packages):
    return any(name == package or name.startswith(package + ".") for package in packages)


# -- layers -------------------------------------------------------------------------

# Each package's layer: a module may import roost modules of a lower layer, and of its own
# package. A package is ranked by its name, so a new module gets its package's rule; a new
# package needs a line here (the test says so). wire -> server -> ops -> domain -> OS.
RANKS = {
    # the leaves everything may use
    "roost": -1, "roost.codec": 0, "roost.errors": 0, "roost.paths": 0, "roost.framing": 0, "roost.controls": 0,
    "roost.states": 0,
    # the one clock: now_ms, monotonic, and the timers handed to the parts that decide by time
    "roost.clock": 0,
    # the job's identity variables (the keeper, the daemon and the clients read them)
    "roost.job_identity": 0,
    # the order of the jobs' rows, the daemon's and the clients'
    "roost.rows": 0,
    # the one threadpool seam (gevent imported only once the daemon turns it on)
    "roost.blocking": 0,
    # the house's one atomic writer (standard library only): the store, the keeper and the
    # term's log all write through it
    "roost.unix.files": 0,
    "roost.store": 1, "roost.config": 1, "roost.mcp_config": 1,
    # the types the ops' contracts are written in (a launch's DispatchArgs too), and the
    # reading of one argument with them (an op whose contract is not written yet)
    "roost.contract": 1, "roost.args": 2,
    # the operating system's seams, and the keeper that holds the terminals
    "roost.unix": 2, "roost.bundle": 2,
    "roost.keeper": 3,
    # the domain, lowest first
    "roost.term.screen": 4,
    "roost.term": 5,
    "roost.git": 5,
    "roost.events": 6,
    "roost.jobs": 7,
    "roost.peers": 8,
    # what the fleet spends: reads the jobs' agents' records, parks jobs over budget,
    # and admits the starts of the board, the schedules and the concierge (issue 29)
    "roost.spend": 8,
    "roost.board": 9,
    "roost.schedule": 10,
    "roost.concierge": 11,
    # notifications: the rows' and the feed's listener, its sinks (runs git's process seam)
    "roost.notify": 10,
    # the daemon's upper layers
    "roost.ops": 20,
    "roost.server": 21,
    "roost.daemon": 22,
    # clients of the socket
    "roost.client": 3,
    "roost.mcp_server": 4,
    # the hub: a client of the wire like the CLI, which starts it (curses, no gevent)
    "roost.hub": 5,
    # `roost web`: a client of the wire like the hub (its Fleet), a gevent process patched
    # by the CLI's command at the one patch site; it masks with roost.notify's masking
    "roost.web": 12,
    "roost.cli": 23,
    "roost.__main__": 24,
}
# The clients' side: nothing of the daemon's imports them.
CLIENT_SIDE = ("roost.client", "roost.mcp_server", "roost.hub", "roost.web", "roost.cli")


def package_of(dotted):
    """The most specific package in RANKS that holds `dotted` (roost's own __init__ is
    ranked alone: it holds no module)."""
    parts = dotted.split(".")
    for end in range(len(parts), 1, -1):
        candidate = ".".join(parts[:end])
        if candidate in RANKS:
            return candidate
    return dotted if dotted == "roost" else None


def layer_violations(modules):
    """(module, why) for each package a module may not import."""
    names = {module.dotted for module in modules}
    problems = []
    for module in modules:
        own = package_of(module.dotted)
        if own is None:
            problems.append((module.dotted, "its package has no layer in RANKS"))
            continue
        for theirs in sorted({package_of(name) for name in module.imports & names} - {None, own}):
            if RANKS[theirs] >= RANKS[own]:
                problems.append((module.dotted, f"imports {theirs} (layer {RANKS[theirs]} >= {RANKS[own]})"))
            elif within(theirs, *CLIENT_SIDE) and not within(own, *CLIENT_SIDE, "roost.__main__"):
                problems.append((module.dotted, f"imports the client side's {theirs}"))
    return problems


def test_layers_call_downward_only():
    assert layer_violations(MODULES) == []


def test_a_planted_upward_import_breaks_the_layer_rule():
    planted = MODULES + [Module("roost.jobs.planted", "from roost.ops import args\n"),
                         Module("roost.term.planted", "from roost.client import connection\n"),
                         Module("roost.newthing", "x = 1\n")]
    found = dict(layer_violations(planted))
    assert "roost.jobs.planted" in found and "roost.term.planted" in found
    assert found["roost.newthing"] == "its package has no layer in RANKS"


def test_a_planted_import_of_the_client_side_breaks_the_layer_rule():
    planted = MODULES + [Module("roost.ops.planted", "from roost.client import connection\n")]
    found = [problem for problem in layer_violations(planted) if problem[0] == "roost.ops.planted"]
    assert found == [("roost.ops.planted", "imports the client side's roost.client")]


# -- the keeper: standard library only ----------------------------------------------

# The keeper's own process imports these roost modules and nothing else of roost's.
# roost.keeper.client is the one exception in its package: it is the daemon's side of
# the keeper's socket, so it runs under gevent in the daemon, never in the keeper.
KEEPER_EXCEPTIONS = {"roost.keeper.client": "the daemon's side of the keeper's socket (gevent)"}
KEEPER_SIDE = ("roost.keeper", "roost.unix", "roost.framing", "roost.clock", "roost.job_identity")


def keeper_violations(modules):
    names = {m.dotted for m in modules}
    problems = []
    for module in modules:
        if not within(module.dotted, "roost.keeper") or module.dotted in KEEPER_EXCEPTIONS:
            continue
        for name in sorted(module.imports):
            if name.split(".")[0] != "roost":
                if name.split(".")[0] not in sys.stdlib_module_names:
                    problems.append((module.dotted, name))
            elif name in names and name != "roost" and (not within(name, *KEEPER_SIDE) or name in KEEPER_EXCEPTIONS):
                problems.append((module.dotted, name))
    return problems


def test_the_keeper_uses_the_standard_library_only():
    """The keeper is rarely restarted and must not depend on gevent or ujson."""
    assert keeper_violations(MODULES) == []


def test_a_planted_library_import_in_the_keeper_breaks_its_rule():
    planted = MODULES + [Module("roost.keeper.planted", "import gevent\nfrom roost import store\n")]
    assert keeper_violations(planted) == [("roost.keeper.planted", "gevent"),
                                          ("roost.keeper.planted", "roost.store")]


# -- the screen: plain Python ---------------------------------------------------------

def closure(module, modules):
    """Every roost module `module` imports, directly or through others."""
    by_name = {m.dotted: m for m in modules}
    seen, stack = set(), [module.dotted]
    while stack:
        for name in by_name[stack.pop()].imports:
            if name in by_name and name not in seen:
                seen.add(name)
                stack.append(name)
    return seen


def screen_violations(modules):
    """term/screen imports no gevent, directly or through the roost modules it imports
    (it is fed by the daemon's loop, and tests and benches drive it without one)."""
    by_name = {m.dotted: m for m in modules}
    problems = []
    for module in modules:
        if not within(module.dotted, "roost.term.screen"):
            continue
        for name in sorted({module.dotted} | closure(module, modules)):
            if any(within(imported, "gevent") for imported in by_name[name].imports):
                problems.append((module.dotted, name))
    return problems


def test_the_screen_imports_no_gevent():
    assert screen_violations(MODULES) == []


def test_a_planted_gevent_import_in_the_screen_breaks_its_rule():
    planted = MODULES + [Module("roost.term.screen.planted", "from roost.term.screen import compact\nfrom roost import store\n")]
    # roost.store reaches gevent (through the threadpool seam): that is enough to break the rule.
    assert screen_violations(planted) == [("roost.term.screen.planted", "roost.blocking")]


# -- the CLI's path ---------------------------------------------------------------------

HEAVY = ("gevent", "dulwich", "pexpect", "pyte", "ujson")
# `roost daemon --foreground` is the daemon itself: the CLI's daemon command may import it.
CLI_EXCEPTIONS = {"roost.cli.commands.daemon": "`--foreground` runs the daemon in this process"}
# `roost web` serves in its own process, patched first (roost.daemon.patching) by its
# command; its devices and guard, which `roost web devices` and `revoke` use, stay light.
CLI_EXCEPTIONS.update({name: "`roost web` serves in this process (gevent's pywsgi)" for name in (
    "roost.cli.commands.web", "roost.web.run", "roost.web.server", "roost.web.app", "roost.web.mirror",
    "roost.web.pages", "roost.web.screens", "roost.web.push")})


def cli_violations(modules):
    """`roost list` must start fast: the CLI's modules, and every roost module they
    import, import no heavy library."""
    by_name = {m.dotted: m for m in modules}
    problems = []
    for module in modules:
        if not within(module.dotted, *CLIENT_SIDE) or module.dotted in CLI_EXCEPTIONS:
            continue
        for name in sorted({module.dotted} | closure(module, modules)):
            heavy = sorted(imported for imported in by_name[name].imports if within(imported, *HEAVY))
            problems += [(module.dotted, name, library) for library in heavy]
    return problems


def test_the_cli_path_imports_nothing_heavy():
    assert cli_violations(MODULES) == []


def test_a_planted_heavy_import_on_the_cli_path_breaks_its_rule():
    planted = MODULES + [Module("roost.cli.commands.planted", "from roost import codec\n")]
    assert cli_violations(planted) == [("roost.cli.commands.planted", "roost.codec", "ujson")]


# -- the op table ---------------------------------------------------------------------

def ops_without_a_caller_rule(ops, refused):
    return sorted(name for name in ops if name not in refused)


def test_every_op_has_a_caller_rule():
    """Who may call an op is one table (roost.ops.callers); an op without a row there is
    refused to every caller at run time, and this test names it first."""
    code = ("import json, roost.daemon.patching as p; p.patch()\n"
            "from roost import ops\nfrom roost.ops.callers import REFUSED\n"
            "print(json.dumps([sorted(ops.load()), sorted(REFUSED)]))\n")
    import json
    import subprocess
    done = subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": ROOT},
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    ops, refused = json.loads(done.stdout)
    assert ops and ops_without_a_caller_rule(ops, refused) == []
    assert ops_without_a_caller_rule(ops + ["planted"], refused) == ["planted"]


# -- the whole tree -------------------------------------------------------------------

def test_gevent_is_patched_in_one_place():
    where = [m.dotted for m in MODULES if "patch_all" in m.source]
    assert where == ["roost.daemon.patching"]


def test_no_shell_strings():
    pattern = re.compile(r"shell\s*=\s*True|os\.system\(|os\.popen\(")
    assert [m.dotted for m in MODULES if pattern.search(m.source)] == []


def test_no_print_in_roost():
    """The daemon logs; the CLI writes through its context (testable, never a stray print)."""
    pattern = re.compile(r"^\s*print\(", re.MULTILINE)
    assert [m.dotted for m in MODULES if pattern.search(m.source)] == []


# Modules allowed past the size aim, and why.
LONG_ON_PURPOSE = {}
MAX_LINES = 400


def long_modules(modules):
    return {m.dotted: m.lines for m in modules if m.lines > MAX_LINES and m.dotted not in LONG_ON_PURPOSE}


def test_modules_stay_small():
    assert long_modules(MODULES) == {}


def test_a_planted_long_module_breaks_the_size_rule():
    planted = Module("roost.jobs.planted", "x = 1\n" * (MAX_LINES + 1))
    assert long_modules(MODULES + [planted])["roost.jobs.planted"] == MAX_LINES + 1
    assert "roost.jobs.planted" not in long_modules(MODULES + [Module("roost.jobs.planted", "x = 1\n" * MAX_LINES)])


# Names that would shadow a library if roost/ were on the module path (PyInstaller puts
# the entry script's directory there while it analyses the bundle): the standard
# library's, and these dependencies' (roost.spec checks the installed ones as it builds).
DEPENDENCIES = ("gevent", "greenlet", "zope", "ujson", "pexpect", "ptyprocess", "pyte", "wcwidth",
                "dulwich", "urllib3", "docopt", "PyInstaller", "altgraph", "packaging", "pytest",
                "mcp", "mcp_types", "pydantic", "anyio", "inotify_simple")


def shadowing(entries):
    stems = {name[:-3] if name.endswith(".py") else name for name in entries if name != "__pycache__"}
    return sorted(stems & (set(sys.stdlib_module_names) | set(DEPENDENCIES)))


def test_no_file_or_package_of_roost_shadows_a_library():
    assert shadowing(os.listdir(PACKAGE)) == []
    assert shadowing(["queue", "platform.py", "jobs"]) == ["platform", "queue"]


@pytest.mark.parametrize("package", sorted(RANKS))
def test_every_ranked_package_exists(package):
    """A rank for a package that was renamed or removed would hide the new one's rule."""
    assert package in NAMES


# -- one of each (issue 28) ---------------------------------------------------------------
# Each mechanism has one home, imported wherever it is needed; a second copy is a rule's
# violation. Each rule lists its exceptions with the reason.

def _string_constants(tree):
    """The string constants of a module's tree, docstrings left out (they may name anything)."""
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    return [node.value for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings]


# The clock: time is read through roost.clock (now_ms, monotonic, timers). The parts that
# decide by time are handed a clock and read no other, so a test can move time.
DECIDE_BY_TIME = ("roost.jobs.limit_resume", "roost.schedule.clock", "roost.schedule.book", "roost.notify.notifier",
                  "roost.jobs.reaping", "roost.concierge.digests", "roost.board.preparing", "roost.jobs.runner",
                  "roost.jobs.processes", "roost.term.reading", "roost.term.kernel_reading",
                  "roost.spend.budgets", "roost.spend.admission", "roost.spend.windows")
_WALL_CLOCK = re.compile(r"^def _?now_ms\(|time\.time\(\) \* 1000", re.MULTILINE)
_OWN_TIME = re.compile(r"\bnow_ms\(\)|\btime\.(time|monotonic|sleep)\(|gevent\.(spawn_later|sleep)\(")


def clock_violations(modules):
    problems = [(m.dotted, "its own wall clock in ms") for m in modules
                if m.dotted != "roost.clock" and _WALL_CLOCK.search(m.source)]
    return problems + [(m.dotted, "reads time past its clock") for m in modules
                       if m.dotted in DECIDE_BY_TIME and _OWN_TIME.search(m.source.replace("clock.now_ms()", ""))]


def test_time_is_read_through_the_one_clock():
    assert clock_violations(MODULES) == []


def test_a_planted_clock_of_its_own_breaks_the_clock_rule():
    planted = [Module("roost.jobs.planted", "import time\ndef now_ms():\n    return int(time.time() * 1000)\n"),
               Module("roost.jobs.reaping", "import gevent\ngevent.spawn_later(5, print)\n")]
    assert clock_violations(MODULES + planted) == [("roost.jobs.planted", "its own wall clock in ms"),
                                                   ("roost.jobs.reaping", "reads time past its clock")]


# The job's identity variables: named in roost.job_identity alone.
IDENTITY_VARIABLES = ("ROOST_JOB_ID", "ROOST_JOB_TOKEN", "ROOST_JOB_DIR", "ROOST_JOB_PERSON", "PI_JOB_ID",
                      "PI_JOB_TOKEN", "PI_DAEMON_SOCK", "PI_JOB_DIR")
IDENTITY_EXCEPTIONS = {
    "roost.job_identity": "their home",
    "roost.jobs.processes": "finds a job's processes by the bytes of their environments in /proc",
    "roost.mcp_config": "the variables Codex must pass on to `roost mcp` (with PYTHONPATH), a list of its own",
}


def identity_violations(modules):
    return sorted({(m.dotted, value) for m in modules if m.dotted not in IDENTITY_EXCEPTIONS
                   for value in _string_constants(m.tree) if value in IDENTITY_VARIABLES})


def test_the_job_identity_variables_are_named_in_one_place():
    assert identity_violations(MODULES) == []


def test_a_planted_identity_variable_breaks_its_rule():
    planted = Module("roost.cli.planted", 'import os\njob = os.environ.get("ROOST_JOB_ID")\n')
    assert identity_violations(MODULES + [planted]) == [("roost.cli.planted", "ROOST_JOB_ID")]


# Text made visible on a person's terminal: roost.controls.visible, one way of escaping.
def visible_violations(modules):
    return [m.dotted for m in modules if m.dotted != "roost.controls"
            and any(isinstance(node, ast.FunctionDef) and node.name == "visible" and node.args.args[:1]
                    and node.args.args[0].arg != "self" for node in m.tree.body)]


def test_one_visible():
    assert visible_violations(MODULES) == []
    planted = Module("roost.cli.planted", "def visible(text):\n    return text.replace('\\x1b', '\\\\e')\n")
    assert visible_violations(MODULES + [planted]) == ["roost.cli.planted"]


# The jobs' order (pinned, the user's order, oldest): roost.rows.order_key.
_ORDER = re.compile(r"\(not \w+\.get\(\"pinned\"\)")


def order_violations(modules):
    return [m.dotted for m in modules if m.dotted != "roost.rows" and _ORDER.search(m.source)]


def test_one_job_order():
    assert order_violations(MODULES) == []
    planted = Module("roost.hub.planted", 'def key(row):\n    return (not row.get("pinned"), row["startedAt"])\n')
    assert order_violations(MODULES + [planted]) == ["roost.hub.planted"]


# A file's content is replaced only through the house's atomic writer (roost.unix.files,
# through roost.store where the daemon writes): no open(..., "w") and rename by hand.
_HAND_WRITE = re.compile(r"""open\([^)]*["'][wx]b?\+?["']|os\.(replace|rename)\(""")
HAND_WRITE_EXCEPTIONS = {
    "roost.unix.files": "the atomic writer itself",
    "roost.cli.commands.web": "opens /dev/null as the stderr of another machine's ssh (no file is written)",
    "roost.store": "sets a damaged file aside under a new name (its content is kept, not written)",
    "roost.jobs.timeline": "a full log is renamed to its older half (a rotation, nothing written)",
    "roost.term.output_log": "a full log is renamed to its older half (a rotation, nothing written)",
    "roost.bundle.unpacked_copies": "an unpacked copy is renamed aside before it is removed",
    "roost.client.connection": "opens os.devnull for a child's stdin and stdout",
    "roost.jobs.jail_places": "puts a new link in a file's place (sandbox.moveInto; the file's content is copied "
                              "by the atomic writer)",
}


def hand_write_violations(modules):
    return [m.dotted for m in modules if m.dotted not in HAND_WRITE_EXCEPTIONS and _HAND_WRITE.search(m.source)]


def test_every_file_is_written_by_the_atomic_writer():
    assert hand_write_violations(MODULES) == []
    planted = Module("roost.cli.commands.planted",
                     'import os\nwith open("x.tmp", "wb") as out:\n    out.write(b"")\nos.replace("x.tmp", "x")\n')
    assert hand_write_violations(MODULES + [planted]) == ["roost.cli.commands.planted"]


# Blocking work off the loop: roost.blocking, the one threadpool seam.
def threadpool_violations(modules):
    return [m.dotted for m in modules if m.dotted != "roost.blocking" and ".threadpool" in m.source]


def test_one_threadpool_seam():
    assert threadpool_violations(MODULES) == []
    planted = Module("roost.git.planted", "import gevent\npool = gevent.get_hub().threadpool\n")
    assert threadpool_violations(MODULES + [planted]) == ["roost.git.planted"]


# -- the tests themselves -------------------------------------------------------------------

TESTS = os.path.join(ROOT, "tests")


def imports_of_tests(sources):
    """(importer, imported test module) for each import of a test module by another file of
    the tests: what several tests share lives in a kit (tests/*kit.py), not in a test."""
    found = []
    for name, source in sources.items():
        for node in ast.walk(ast.parse(source)):
            modules = ([alias.name for alias in node.names] if isinstance(node, ast.Import)
                       else [node.module] if isinstance(node, ast.ImportFrom) and node.module else [])
            found += [(name, module) for module in modules if module.split(".")[-1].startswith("test_")]
    return sorted(found)


def sources_of_tests():
    found = {}
    for directory, subdirs, files in os.walk(TESTS):
        subdirs[:] = [name for name in subdirs if name not in ("__pycache__", "fixtures", "agents")]
        for name in files:
            if name.endswith(".py"):
                with open(os.path.join(directory, name), encoding="utf-8") as handle:
                    found[os.path.relpath(os.path.join(directory, name), TESTS)] = handle.read()
    return found


def test_tests_share_kits_not_each_other():
    sources = sources_of_tests()
    assert imports_of_tests(sources) == []
    planted = {**sources, "test_planted.py": "from test_peers import speaker\n"}
    assert imports_of_tests(planted) == [("test_planted.py", "test_peers")]


# -- the clients ask the daemon, they do not import it ---------------------------------

DAEMON_SIDE = ("roost.ops", "roost.server", "roost.daemon")


def client_imports_of_the_daemon(modules):
    """(module, what) for each client-side module that imports the daemon's upper layers
    (the CLI refuses by a table of its own: roost.cli.persons_ops)."""
    names = {m.dotted for m in modules}
    return sorted((m.dotted, name) for m in modules
                  if within(m.dotted, *CLIENT_SIDE) and m.dotted not in CLI_EXCEPTIONS
                  for name in m.imports & names if within(name, *DAEMON_SIDE))


def test_the_clients_import_nothing_of_the_daemon():
    assert client_imports_of_the_daemon(MODULES) == []
    planted = Module("roost.cli.planted", "from roost.ops.callers import is_the_persons\n")
    assert client_imports_of_the_daemon(MODULES + [planted]) == [("roost.cli.planted", "roost.ops.callers")]
