"""A repository's own config as roost's git reads it in a tree's files: plain settings
only (issue 26 item 4).

Its config (`<common dir>/config`, a worktree's `config.worktree`, whatever they
include) may be written by a task's agent, and names the programs git runs for a file's
attributes: `filter.<name>.clean/smudge/process`, `merge.<name>.driver`,
`diff.<name>.textconv/command`, under any name, so no `-c` setting can reach them all.
So a run in a jail (jail.py) gets, bound over `<common dir>/config`, a copy that keeps
only the settings below, read once by git itself (`git config --file --list
--no-includes`): no section with a name of its own (`[filter "x"]`, `[remote "o"]`), no
include, and `extensions.worktreeConfig` folded in (the worktree's keys copied, the
extension dropped, so git reads no `config.worktree` either). The user's global and
system config stay as they are: they are the person's.

Where no jail can be made, `driver_names` lists the drivers the repository's config
defines, for command.py to switch off one by one (`filter.<name>.clean=` ...); a driver
written into the config between that listing and git's own read would still run: the
jail has no such gap.
"""

import hashlib
import os
import secrets
import stat

from roost.git import process
from roost.unix import files

# Plain settings git needs to read the repository as it is, and the user's identity.
KEPT = frozenset({
    "core.repositoryformatversion", "core.bare", "core.worktree", "core.filemode", "core.symlinks",
    "core.ignorecase", "core.precomposeunicode", "core.logallrefupdates", "core.autocrlf", "core.eol",
    "core.safecrlf", "core.checkstat", "core.trustctime", "core.quotepath", "core.sparsecheckout",
    "core.sparsecheckoutcone", "core.commitgraph", "core.multipackindex", "core.splitindex", "core.protecthfs",
    "core.protectntfs", "core.abbrev", "core.compression", "core.loosecompression", "core.bigfilethreshold",
    "user.name", "user.email", "user.useconfigonly", "author.name", "author.email", "committer.name",
    "committer.email", "i18n.commitencoding", "i18n.logoutputencoding", "init.defaultbranch",
    "merge.conflictstyle", "merge.renames", "merge.directoryrenames", "merge.renamelimit",
    "diff.renames", "diff.renamelimit", "diff.algorithm", "index.version",
})
_DROPPED_EXTENSION = "extensions.worktreeconfig"
_DRIVER_SECTIONS = ("filter", "merge")
_TRUE = ("true", "yes", "on", "1")
READ_S = 10.0
MAX_CONFIG = 1 << 20        # a config file larger than this is no repository's own
CACHED = 64


class ConfigError(Exception):
    """The repository's config cannot be read into a copy; the text says why."""


class Copies:
    """Plain copies of repositories' config, made in a private directory (0700) and kept
    by what they were made from."""

    def __init__(self, directory):
        self.directory = directory
        self.read = {}          # digest of a config file's bytes -> its plain settings
        self.made = {}          # digest of what a copy was made from -> the copy's path

    def copy_for(self, common_dir, git_dir, program, env):
        """The path of the plain copy of the config a run with this git dir reads. git
        reads each file once: again only when its bytes changed."""
        common = _read(os.path.join(common_dir, "config"))
        listed = self._settings(common, program, env)
        worktree = b""
        flag = listed.get(_DROPPED_EXTENSION, "false")
        if flag is None or flag.lower() in _TRUE:
            worktree = _read(os.path.join(git_dir, "config.worktree"))
        digest = hashlib.sha256(common + b"\0" + worktree).hexdigest()
        found = self.made.get(digest)
        if found is not None and os.path.exists(found):
            return found
        listed = dict(listed, **self._settings(worktree, program, env))
        path = os.path.join(self.directory, f"config-{digest[:32]}")
        _write(path, render(listed))
        _remember(self.made, digest, path)
        return path

    def _settings(self, data, program, env):
        digest = hashlib.sha256(data).hexdigest()
        if digest not in self.read:
            _remember(self.read, digest, _listing(data, self._scratch(), program, env))
        return self.read[digest]

    def submodules(self, work_tree, program, env):
        """The names `.gitmodules` in `work_tree` gives its submodules (read from a copy,
        so what is listed is what was read)."""
        data = _read(os.path.join(work_tree, ".gitmodules"))
        names = set()
        for key, _value in _entries(data, self._scratch(), program, env):
            section, _dot, rest = key.partition(".")
            name, _dot, _key = rest.rpartition(".")
            if section == "submodule" and name:
                names.add(name)
        return names

    def _scratch(self):
        os.makedirs(self.directory, mode=0o700, exist_ok=True)
        return os.path.join(self.directory, f".read-{secrets.token_hex(6)}")


def _remember(cache, key, value):
    if len(cache) >= CACHED:
        cache.pop(next(iter(cache)))
    cache[key] = value


def _read(path):
    """A config file's bytes (b"" when there is none). Opened without blocking and read
    only when it is a plain file: a fifo planted there (`.gitmodules` is a worktree's
    file) would hold the daemon's loop."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    except FileNotFoundError:
        return b""
    except OSError as error:
        raise ConfigError(f"{path} cannot be read: {error.strerror}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ConfigError(f"{path} is not a plain file")
        data = os.read(fd, MAX_CONFIG + 1)
    finally:
        os.close(fd)
    if len(data) > MAX_CONFIG:
        raise ConfigError(f"{path} is larger than {MAX_CONFIG} bytes")
    return data


def _entries(data, scratch, program, env):
    """[(key, value)] of config text `data`, as git reads it (value None: a key with no
    `=`, which is true)."""
    if not data.strip():
        return []
    _write(scratch, data)
    try:
        ended = process.run(program, ["git", "config", "--file", scratch, "--no-includes", "--list", "-z"], env,
                            READ_S)
    finally:
        os.unlink(scratch)
    if ended.returncode != 0:
        said = ended.stderr.decode("utf-8", "replace").strip()
        raise ConfigError(f"git cannot read {said or 'a config file'}")
    entries = []
    for entry in ended.stdout.split(b"\0"):
        key, newline, value = os.fsdecode(entry).partition("\n")
        if key:
            entries.append((key, value if newline else None))
    return entries


def _listing(data, scratch, program, env):
    """{key: value} of the plain settings in config text `data` (the last of a key wins,
    as it does for git)."""
    return {key: value for key, value in _entries(data, scratch, program, env)
            if key in KEPT or key.startswith("extensions.") and key.count(".") == 1}


def render(settings):
    """Config text of plain `settings` {section.key: value}, every value quoted."""
    sections = {}
    for key, value in settings.items():
        if key == _DROPPED_EXTENSION or value is not None and ("\r" in value or "\0" in value):
            continue
        section, _dot, name = key.partition(".")
        sections.setdefault(section, []).append((name, value))
    lines = []
    for section, entries in sections.items():
        lines.append(f"[{section}]")
        for name, value in entries:
            if value is None:
                lines.append(f"\t{name}")
                continue
            quoted = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
            lines.append(f'\t{name} = "{quoted}"')
    return ("\n".join(lines) + "\n").encode("utf-8", "surrogateescape")


def _write(path, data):
    """Write a file of ours in the private directory with the house's writer; a copy is
    made again from its source when missing, so no fsync."""
    files.write_atomic(path, data, mode=0o600, durable=False)


def driver_names(located, program, env):
    """{section: {name}} of the filter and merge drivers that the repository's own
    config (and what it includes) defines, for a run located by `located` (git's argv
    up to the command)."""
    ended = process.run(program, [*located, "config", "--list", "--name-only", "--show-scope", "-z"], env, READ_S)
    if ended.returncode == 0:
        parts = ended.stdout.split(b"\0")
        keys = [key for scope, key in zip(parts[0::2], parts[1::2]) if scope in (b"local", b"worktree")]
    else:
        # a git before 2.26 tells no scope: every driver it knows is switched off
        ended = process.run(program, [*located, "config", "--list", "--name-only", "-z"], env, READ_S)
        keys = ended.stdout.split(b"\0") if ended.returncode == 0 else []
    found = {section: set() for section in _DRIVER_SECTIONS}
    for key in keys:
        section, _dot, rest = os.fsdecode(key).partition(".")
        name, _dot, _key = rest.rpartition(".")
        if section in found and name:
            found[section].add(name)
    return found
