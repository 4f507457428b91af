"""roost's built-in agent profiles: Claude Code, Codex, aider and pi out of the box.

They are data, `builtin_profiles.json`, shipped with roost (roost.bundle.files finds it
in a checkout and in the frozen binary alike). Each is a profile as roost.json has them
(CONTRACT.md "Agent profiles"), plus `title`, `recordedOn` (the agent versions whose
screens its patterns were checked on) and `versionCommand` (the argv that prints the
installed version: `roost doctor`). A profile of the same name in roost.json replaces
a built-in one whole (roost.jobs.profiles).

An argument that starts with `{bundle}/` names a file shipped with roost (the pi
extension): it is expanded when the program is started, so a job started again after
an upgrade gets the new release's file, not the removed copy of the old one's. So is
`{roost-mcp:claude}` (and `:codex`): the words that give the agent roost's MCP server
(roost.mcp_config), so Claude Code and Codex have roost's tools with no glue; and
`{roost-statusline:claude}`: Claude Code's status line made roost's (`roost statusline`).
`{sessionId}` in a command and its resume is the job's own conversation id, drawn once
at dispatch (roost.jobs.recovery): Claude Code starts with `--session-id` and resumes
with `--resume` that id, never the latest conversation of the folder (another job's).
"""

import json
import logging
import os
import re

from roost import mcp_config
from roost.bundle import files, userenv

log = logging.getLogger(__name__)

BUNDLE = "{bundle}/"
MCP = re.compile(r"^\{roost-mcp:([a-z]+)\}$")   # the words that give that agent roost mcp
# issue 29: the words that make Claude Code's status line roost's (`roost statusline`,
# run from the job's PATH), which records its plan windows and shows the user's own.
STATUS_LINE = "{roost-statusline:claude}"
STATUS_LINE_ARGS = ["--settings", json.dumps({"statusLine": {"type": "command", "command": "roost statusline claude"}},
                                             separators=(",", ":"))]
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
    """`argv` with each `{bundle}/...` argument made the path of that bundled file, and
    each `{roost-mcp:AGENT}` the words that give AGENT roost's MCP server (this roost's
    `roost mcp`, as it runs now)."""
    expanded = []
    for word in argv:
        if not isinstance(word, str):
            expanded.append(word)
        elif word.startswith(BUNDLE):
            expanded.append(files.bundled(word[len(BUNDLE):]))
        elif MCP.match(word):
            expanded += mcp_config.mcp_args(MCP.match(word).group(1), userenv.roost_command(), roost_env())
        elif word == STATUS_LINE:
            expanded += STATUS_LINE_ARGS
        else:
            expanded.append(word)
    return expanded


def readable(argv):
    """`argv` as a person reads it: the MCP server's many words as one, `[roost mcp]`."""
    return ["[roost mcp]" if isinstance(word, str) and MCP.match(word) else
            "[roost statusline]" if word == STATUS_LINE else expand([word])[0] for word in argv]


def roost_env():
    """What roost's own subcommands run in a job (`roost mcp`, the built-in concierge) need
    besides the job's identity: from a checkout, where roost is."""
    return {} if files.is_frozen() else {"PYTHONPATH": files.bundle_dir()}


def bundled_files(argv):
    """The paths of the bundled files `argv` names (to check that they are there)."""
    return [files.bundled(word[len(BUNDLE):]) for word in argv
            if isinstance(word, str) and word.startswith(BUNDLE)]


def missing_files(argv):
    return [path for path in bundled_files(argv) if not os.path.isfile(path)]
