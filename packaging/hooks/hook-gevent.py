# roost's hook for gevent, in place of PyInstaller's own: that one collects every gevent
# submodule, its tests and the cffi libuv loop included, then leaves roost.spec to exclude
# them again (with a warning for each). This collects what roost can run, and nothing else.
from PyInstaller.utils.hooks import collect_data_files, collect_submodules, copy_metadata

_UNUSED = ("gevent.tests", "gevent.testing", "gevent.libuv", "gevent.backdoor")

excludedimports = list(_UNUSED)
hiddenimports = collect_submodules(
    "gevent", filter=lambda name: not any(name == unused or name.startswith(unused + ".") for unused in _UNUSED)
)
datas = collect_data_files("gevent", excludes=["**/tests", "**/testing", "**/libuv"])
# gevent looks up its plugins with importlib.metadata entry points.
datas += copy_metadata("gevent", recursive=True)
