"""roost's built-in agent profiles: Claude Code, Codex, aider and pi out of the box.

They are data, `builtin_profiles.json`, shipped with roost (roost.bundle.files finds it
in a checkout and in the frozen binary alike). Each is a profile as roost.json has them
(CONTRACT.md "Agent profiles"), plus `title`, `recordedOn` (the agent versions whose
screens its patterns were checked on) and `versionCommand` (the argv that prints the
installed version: `roost doctor`). A profile of the same name in roost.json replaces
a built-in one whole (roost.jobs.profiles).

An argument that starts with `{bundle}/` names a file shipped with roost (the pi
extension): it is expanded when the program is started, so a job started again after
an upgrade gets the new release's file, not the removed copy of the old one's.
"""

import json
import logging
import os

from roost.bundle import files

log = logging.getLogger(__name__)

BUNDLE = "{bundle}/"
_loaded = None


def profiles():
    """name -> profile (a fresh copy each call: callers may change what they get)."""
    global _loaded
    if _loaded is None:
        path = files.bundled(files.BUILTIN_PROFILES)
        try:
            with open(path, encoding="utf-8") as handle:
                document = json.load(handle)
            _loaded = document["profiles"]
        except (OSError, ValueError, KeyError, TypeError) as error:
            # A broken install still runs every other job; `roost doctor` says this.
            log.error("the built-in profiles cannot be read from %s (%s)", path, error)
            return {}
    return json.loads(json.dumps(_loaded))


def expand(argv):
    """`argv` with each `{bundle}/...` argument made the path of that bundled file."""
    if not any(isinstance(word, str) and word.startswith(BUNDLE) for word in argv):
        return list(argv)
    return [files.bundled(word[len(BUNDLE):]) if isinstance(word, str) and word.startswith(BUNDLE) else word
            for word in argv]


def bundled_files(argv):
    """The paths of the bundled files `argv` names (to check that they are there)."""
    return [files.bundled(word[len(BUNDLE):]) for word in argv
            if isinstance(word, str) and word.startswith(BUNDLE)]


def missing_files(argv):
    return [path for path in bundled_files(argv) if not os.path.isfile(path)]
