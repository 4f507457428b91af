"""A repository's own commands (M56): `.roost/project.json` on its base branch, and a
person's approval of them.

    {"verify": "make test", "setup": ["npm", "ci"], "maxRounds": 3}

A command is a shell line (run by `sh -c`) or an argv list. Nothing of it runs until a
person approved it; the approval is pinned to a hash of the commands, so a project.json
changed on base (a new command, or an agent's edit that was merged) needs a new one.
Approvals are kept per repository in `$ROOST_HOME/approvals.json` (version 1, through
roost.store, fields this version does not know kept).
"""

import hashlib
import json
import os
from dataclasses import dataclass

from roost import git, store
from roost.clock import now_ms
from roost.errors import bad_request

PROJECT_FILE = ".roost/project.json"
FILE = "approvals.json"
VERSION = 1
MAX_ROUNDS = 3
COMMAND_LIMIT = 4000


@dataclass(frozen=True)
class Project:
    """The commands a repository names; `hash` is what an approval is pinned to."""

    verify: object
    setup: object
    max_rounds: int
    hash: str

    def argv(self, kind):
        command = self.verify if kind == "verify" else self.setup
        if command is None:
            return None
        return ["sh", "-c", command] if isinstance(command, str) else list(command)

    def shown(self):
        lines = []
        for kind in ("setup", "verify"):
            command = getattr(self, kind)
            if command is not None:
                lines.append(f"{kind}: " + (command if isinstance(command, str) else json.dumps(command)))
        return lines


class ProjectError(Exception):
    """project.json is there but cannot be used."""


def read_project(repo, ref):
    """The Project on `ref` (a branch name), None when it has no project.json."""
    raw = git.file_at(repo, ref, PROJECT_FILE)
    if raw is None:
        return None
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as error:
        raise ProjectError(f"{PROJECT_FILE} on {ref} is not JSON: {error}") from None
    if not isinstance(data, dict):
        raise ProjectError(f"{PROJECT_FILE} on {ref} is not a JSON object")
    commands = {kind: _command(data.get(kind), kind, ref) for kind in ("verify", "setup")}
    rounds = data.get("maxRounds", MAX_ROUNDS)
    if isinstance(rounds, bool) or not isinstance(rounds, int) or not 1 <= rounds <= 100:
        raise ProjectError(f"{PROJECT_FILE} on {ref}: maxRounds must be a whole number from 1 to 100")
    digest = hashlib.sha256(json.dumps(commands, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()
    return Project(commands["verify"], commands["setup"], rounds, digest)


def _command(value, kind, ref):
    if value is None:
        return None
    if isinstance(value, str) and value.strip() and len(value) <= COMMAND_LIMIT:
        return value
    if (isinstance(value, list) and value and len(value) <= 200
            and all(isinstance(word, str) and word and "\0" not in word for word in value)):
        return list(value)
    raise ProjectError(f"{PROJECT_FILE} on {ref}: {kind} must be a shell line or a list of words")


class Approvals:
    def __init__(self, home):
        self.path = os.path.join(home, FILE)
        self.data = None

    def _load(self):
        if self.data is None:
            data = store.read_json(self.path) or {}
            data.setdefault("repositories", {})
            data["version"] = VERSION
            self.data = data
        return self.data

    def approved(self, root, project):
        """Whether a person approved exactly these commands for this repository."""
        entry = self._load()["repositories"].get(root)
        return bool(entry) and entry.get("hash") == project.hash

    def approve(self, root, project, by):
        self._load()["repositories"][root] = {"hash": project.hash, "verify": project.verify,
                                              "setup": project.setup, "at": now_ms(), "by": by}
        store.write_json(self.path, self.data)


def check_hash(project, wanted):
    """An approval that names a hash approves only the commands it was shown."""
    if wanted is not None and (not isinstance(wanted, str) or wanted != project.hash):
        raise bad_request("the repository's commands changed since they were shown (their hash differs): "
                          "look at them again with dry")
