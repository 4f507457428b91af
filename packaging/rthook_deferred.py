# PyInstaller runtime hook (roost.spec): PyInstaller's own runtime hooks for inspect,
# pkgutil and multiprocessing, run when roost first imports those modules rather than
# at every start. Run eagerly they import inspect, zipfile, pkgutil and multiprocessing
# before roost's entry: about 30 ms of a 50 ms `roost --version`. roost.spec drops them
# from the start-up scripts and ships their files under deferred_rthooks/.
import os
import sys


def _install():
    hook_dir = os.path.join(sys._MEIPASS, "deferred_rthooks")
    pending = {
        module: os.path.join(hook_dir, f"pyi_rth_{module}.py")
        for module in ("inspect", "pkgutil", "multiprocessing")
    }
    pending = {module: path for module, path in pending.items() if os.path.exists(path)}

    def run_hook(path):
        with open(path, "rb") as source:
            code = compile(source.read(), path, "exec")
        exec(code, {"__name__": "__pyi_deferred_rthook__", "__file__": path})

    class HookedLoader:
        """The module's own loader, then the hook once the module is complete."""

        def __init__(self, loader, hook_path):
            self._loader = loader
            self._hook_path = hook_path

        def create_module(self, spec):
            return self._loader.create_module(spec)

        def exec_module(self, module):
            self._loader.exec_module(module)
            run_hook(self._hook_path)

        def __getattr__(self, name):
            return getattr(self._loader, name)

    class AfterImport:
        """A meta path finder that only wraps the loader of a module with a pending hook."""

        def find_spec(self, name, path=None, target=None):
            hook_path = pending.pop(name, None)
            if hook_path is None:
                return None
            if not pending:
                sys.meta_path.remove(self)
            for finder in sys.meta_path:
                find = getattr(finder, "find_spec", None)
                spec = None if finder is self or find is None else find(name, path, target)
                if spec is not None:
                    spec.loader = HookedLoader(spec.loader, hook_path)
                    return spec
            return None

    for module in [module for module in pending if module in sys.modules]:
        run_hook(pending.pop(module))   # imported already (by the bootstrap): run it now
    # The multiprocessing hook only replaces multiprocessing.freeze_support(), which a
    # program calls after importing multiprocessing: deferring it changes nothing.
    if pending:
        sys.meta_path.insert(0, AfterImport())


_install()
del _install
