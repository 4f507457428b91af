"""Files shipped inside roost: found the same way from a checkout and from the
frozen binary (CONTRACT: `roost agent-file` writes the bundled `roost_agent.py`)."""

import os
import sys

AGENT_FILE = "roost_agent.py"


def is_frozen():
    """True in the PyInstaller build (dist/roost), False when run from source."""
    return bool(getattr(sys, "frozen", False))


def bundle_dir():
    """The directory that holds roost's data files.

    Frozen: PyInstaller's `_MEIPASS` (the onedir bundle's `_internal`), where roost.spec
    puts them. From source: the checkout's root, the parent of the `roost` package.
    """
    if is_frozen():
        return sys._MEIPASS
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def agent_file_path():
    """The path of the bundled `roost_agent.py`."""
    return os.path.join(bundle_dir(), AGENT_FILE)
