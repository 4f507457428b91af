"""Which roost.json keys roost's code reads, found by reading the code (its AST), for
tests/test_docs.py's check that docs/configuration.md lists them all.

roost reads roost.json in many places and in a few shapes, and a key is named where it
is read, not declared anywhere. So this follows the values, as a reader would:

- **the file itself** is any value named `config`, `_config` or `settings_value` (the
  daemon's `services.config`, a `Config`, the parsed file the CLI or a helper is handed),
  what `.current()` gives of it, and `self` in roost.config's `Config`;
- **a section** is what `.get("key")` or `["key"]` gives of the file or of a section
  (`notify`, then `notify.command`); a name assigned one (`given = config.get("concierge")`),
  a parameter handed one (`Settings(config.get("notify"))`, in this module or another of
  roost's) or `dict(section)` holds it too;
- **a profile** is any value named `profile` (`agentProfiles.<name>`), and **a term
  block** any value named `term` (`agentProfiles.<name>.term`: a launch's `term` has the
  same keys, DispatchArgs.term), unless the function assigns that name a section itself;
- **a read** is `section.get(KEY)`, `section[KEY]` or `KEY in section`, where KEY is a
  string, a module's string constant (`SETTING`), a loop's name over a tuple of strings
  or a module's tuple constant (`for kind in KINDS`), or a parameter handed a string
  (`self.workspaces.setting("prepareHoldMs", ...)`).

A call is followed to its function when it is named in the module, imported from
roost, a method of the same class (`self.x(...)`), or the only function of roost with
that name. What a section is handed to outside roost, or read by a name computed at run
time, is not seen: name it where it is read, as above.
"""

import ast
import collections
import os
import re

ROOT_NAMES = frozenset({"config", "_config", "settings_value"})
CONVENTIONS = {"profile": "agentProfiles.<name>", "term": "agentProfiles.<name>.term"}
# Classes whose `self` is the file: roost.config's Config, whose methods read a key they
# are handed (`config.positive("prepareHoldMs", ...)`: the key is read where it is named).
FILE_CLASSES = {"roost.config": ("Config",)}
# Sections that reach a function over the wire, where no call can be followed:
# (module, function) -> {parameter: section}.
OVER_THE_WIRE = {
    # the concierge-policy op answers roost.json's concierge.rules to the built-in concierge
    ("roost.cli.builtin_concierge", "_rules"): {"given": "concierge.rules"},
}
FILE = ""               # the section that is the whole file
_IDENTIFIER = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")


def _join(section, key):
    return f"{section}.{key}" if section else key


class _Module:
    def __init__(self, dotted, path, source):
        self.dotted = dotted
        self.path = path
        self.tree = ast.parse(source, filename=path)
        self.constants = {}          # NAME -> (str, ...) for a module's string and tuple constants
        self.imports = {}            # local name -> dotted name it stands for
        self.functions = {}          # "f" or "Class.f" -> FunctionDef
        self.classes = set()
        for node in self.tree.body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                strings = _strings(node.value)
                if strings is not None:
                    self.constants[node.targets[0].id] = strings
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    self.imports[alias.asname or alias.name] = f"{node.module}.{alias.name}"
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        self.imports[alias.asname] = alias.name
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.functions[node.name] = node
            elif isinstance(node, ast.ClassDef):
                self.classes.add(node.name)
                for item in node.body:
                    if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        self.functions[f"{node.name}.{item.name}"] = item


def _strings(node):
    """A string, or a tuple or list of strings, as a tuple; else None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return (node.value,)
    if isinstance(node, (ast.Tuple, ast.List)) and node.elts and all(
            isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts):
        return tuple(e.value for e in node.elts)
    return None


def _terminal_name(node):
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


class _Function:
    """One function's reading of roost.json, given what its parameters were handed."""

    def __init__(self, scanner, module, qualname, node, params):
        self.scanner = scanner
        self.module = module
        self.qualname = qualname
        self.node = node
        self.params = params          # name -> {("section", s, None) | ("key", k, where the call is)}
        self.local = collections.defaultdict(set)  # name -> sections assigned to it here
        self.loops = {}                           # loop name -> the strings it runs over

    def sections(self, node):
        """The sections `node` may hold (an empty set: none)."""
        if isinstance(node, ast.Name):
            found = set(self.local.get(node.id, ()))
            found |= {value for kind, value, _ in self.params.get(node.id, ()) if kind == "section"}
            if node.id in ROOT_NAMES or (node.id == "self" and self.qualname.split(".")[0] in self.file_classes()):
                found.add(FILE)
            if not found and node.id in CONVENTIONS:
                found.add(CONVENTIONS[node.id])
            return found
        if isinstance(node, ast.Attribute):
            return {FILE} if node.attr in ROOT_NAMES else set()
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr == "current" and not node.args \
                    and _terminal_name(func.value) in ROOT_NAMES:
                return {FILE}
            if isinstance(func, ast.Attribute) and func.attr == "get" and node.args:
                return {_join(s, k) for s in self.sections(func.value) for k, _ in self.keys(node.args[0])}
            if isinstance(func, ast.Name) and func.id == "dict" and len(node.args) == 1:
                return self.sections(node.args[0])
            return set()
        if isinstance(node, ast.Subscript):
            return {_join(s, k) for s in self.sections(node.value) for k, _ in self.keys(node.slice)}
        if isinstance(node, ast.IfExp):
            return self.sections(node.body) | self.sections(node.orelse)
        if isinstance(node, ast.BoolOp):
            return set().union(*(self.sections(value) for value in node.values))
        return set()

    def keys(self, node):
        """The strings a key expression may be, each with where it was written when that
        is a call's argument (None: here)."""
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return {(node.value, None)}
        if isinstance(node, ast.Name):
            if node.id in self.loops:
                return {(key, None) for key in self.loops[node.id]}
            if node.id in self.params:
                return {(value, where) for kind, value, where in self.params[node.id] if kind == "key"}
            if node.id in self.module.constants and len(self.module.constants[node.id]) == 1:
                return {(self.module.constants[node.id][0], None)}
        return set()

    def file_classes(self):
        return FILE_CLASSES.get(self.module.dotted, ())

    def _loop(self, target, iterable):
        if not isinstance(target, ast.Name):
            return
        strings = _strings(iterable)
        if strings is None and isinstance(iterable, ast.Name) and iterable.id not in self.params:
            strings = self.module.constants.get(iterable.id)
        if strings is not None:
            self.loops[target.id] = self.loops.get(target.id, ()) + strings
        # The items of a list section (`for rule in rules`): `concierge.rules[]`.
        self.local[target.id] |= {section + "[]" for section in self.sections(iterable)}

    def run(self):
        nodes = list(ast.walk(self.node))
        for _ in range(4):          # assignments and loops that feed each other, in any order
            self.loops = {}
            for node in nodes:
                if isinstance(node, (ast.For, ast.comprehension)):
                    self._loop(node.target, node.iter)
                elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                    self.local[node.targets[0].id] |= self.sections(node.value)
        for node in nodes:
            if isinstance(node, ast.Call):
                func = node.func
                if isinstance(func, ast.Attribute) and func.attr == "get" and node.args:
                    self._read(func.value, node.args[0], node)
                self._follow(node)
            elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
                self._read(node.value, node.slice, node)
            elif isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.In):
                self._read(node.comparators[0], node.left, node)

    def _read(self, holder, key, node):
        for section in self.sections(holder):
            for name, where in self.keys(key):
                self.scanner.found[_join(section, name)].add(where or f"{self.module.path}:{node.lineno}")

    def _follow(self, call):
        """Hand a called function of roost's the sections and strings it is given."""
        target = self.scanner.callee(self.module, self.qualname, call.func)
        if target is None:
            return
        module, qualname, node, skip = target
        names = [a.arg for a in node.args.posonlyargs + node.args.args][skip:]
        handed = list(zip(names, call.args)) + [(k.arg, k.value) for k in call.keywords if k.arg in names]
        given = {}
        for name, value in handed:
            values = {("section", s, None) for s in self.sections(value)}
            if isinstance(value, ast.Constant) and isinstance(value.value, str) and _IDENTIFIER.match(value.value):
                values.add(("key", value.value, f"{self.module.path}:{call.lineno}"))
            if values:
                given[name] = values
        if given:
            self.scanner.hand(module, qualname, given)


_PARSED = {}


def _parsed(dotted, path, text):
    """A module read once per test run (a scan only reads it)."""
    key = (dotted, path, text)
    if key not in _PARSED:
        _PARSED[key] = _Module(dotted, path, text)
    return _PARSED[key]


class Scanner:
    def __init__(self, sources):
        """`sources`: {dotted module name: (path shown, source text)}."""
        self.modules = {dotted: _parsed(dotted, path, text) for dotted, (path, text) in sources.items()}
        self.found = collections.defaultdict(set)     # key -> {"path:line"}
        self._handed = {}                             # (module, qualname) -> params
        self._queue = collections.deque()
        by_name = collections.defaultdict(list)
        for module in self.modules.values():
            for qualname in module.functions:
                by_name[qualname.rsplit(".", 1)[-1]].append((module, qualname))
        self._unique = {name: places[0] for name, places in by_name.items() if len(places) == 1}

    def callee(self, module, qualname, func):
        """(module, qualname, def, how many leading parameters the call does not pass)."""
        if isinstance(func, ast.Name):
            return self._named(module, func.id) or self._imported(module.imports.get(func.id))
        if not isinstance(func, ast.Attribute):
            return None
        owner = func.value
        if isinstance(owner, ast.Name) and owner.id == "self" and "." in qualname:
            cls = qualname.split(".")[0]
            return self._place(module, f"{cls}.{func.attr}", 1)
        if isinstance(owner, ast.Name) and owner.id in module.imports:
            return self._imported(f"{module.imports[owner.id]}.{func.attr}")
        if func.attr in self._unique:
            place, name = self._unique[func.attr]
            return self._place(place, name, 1 if "." in name else 0)
        return None

    def _place(self, module, qualname, skip):
        node = module.functions.get(qualname)
        return (module, qualname, node, skip) if node is not None else None

    def _named(self, module, name):
        if name in module.classes:
            return self._place(module, f"{name}.__init__", 1)
        return self._place(module, name, 0)

    def _imported(self, dotted):
        if not dotted or "." not in dotted:
            return None
        module_name, name = dotted.rsplit(".", 1)
        module = self.modules.get(module_name)
        return self._named(module, name) if module is not None else None

    def hand(self, module, qualname, given):
        params = self._handed.setdefault((module.dotted, qualname), {})
        grew = False
        for name, values in given.items():
            before = len(params.setdefault(name, set()))
            params[name] |= values
            grew = grew or len(params[name]) > before
        if grew:
            self._queue.append((module, qualname))

    def scan(self):
        """{key: {"path:line", ...}} of every key read."""
        for (dotted, qualname), params in OVER_THE_WIRE.items():
            if dotted in self.modules:
                self._handed[(dotted, qualname)] = {name: {("section", s, None)} for name, s in params.items()}
        for module in self.modules.values():
            for qualname in module.functions:
                self._queue.append((module, qualname))
        runs = 0
        while self._queue and runs < 100000:
            module, qualname = self._queue.popleft()
            params = {name: set(values) for name, values in self._handed.get((module.dotted, qualname), {}).items()}
            _Function(self, module, qualname, module.functions[qualname], params).run()
            runs += 1
        return dict(self.found)


def roost_sources(root):
    """Every module of the roost package: {dotted: (path from root, text)}."""
    sources = {}
    package = os.path.join(root, "roost")
    for directory, subdirs, files in os.walk(package):
        subdirs[:] = sorted(d for d in subdirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith(".py"):
                path = os.path.join(directory, name)
                relative = os.path.relpath(path, root)
                dotted = relative[:-3].replace(os.sep, ".")
                dotted = dotted[:-len(".__init__")] if dotted.endswith(".__init__") else dotted
                with open(path, encoding="utf-8") as handle:
                    sources[dotted] = (relative, handle.read())
    return sources


def keys_read(root, extra=None):
    """Every roost.json key roost's code reads, with where; `extra` adds (planted)
    modules: {dotted: (path, text)}."""
    sources = roost_sources(root)
    sources.update(extra or {})
    return Scanner(sources).scan()
