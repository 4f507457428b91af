"""What a job's jail lets it see and write (issue 26; the manual: docs/security.md).

Every job runs in a jail of its own (roost.unix.bwrap) wherever bubblewrap works, but the
person's own shell (`--as-me`), a launch with `sandbox: false` (`roost run --no-sandbox`),
and what roost.json turns off (`"sandbox": false` at its top, or in a profile).

In a jail the file system is read-only, `/tmp` is its own, and roost's home is hidden;
the jail may write:
- its working directory (a task's worktree), and the git directories git writes for it
  there: the repository's `.git` it is in, or for a worktree its own git directory and
  the repository's objects, refs and logs, never that repository's config or hooks;
- its own job directory (`ROOST_JOB_DIR`), inside the hidden home;
- `sandbox.write` of its profile (the built-in profiles name their agent's state and
  cache directories) and of roost.json's top (for every job).
`sandbox.read` binds paths read-only (a program installed under /tmp), `sandbox.hide`
hides paths (`~/.ssh` by default), `sandbox.network: "off"` gives it no network. It
reaches the daemon's socket and roost's own `roost` (first on its PATH), not the keeper's
socket nor any other job's directory (roost.jobs.jail_places). It gets a range of ports of
its own (`sandbox.ports`: `{"first": 41000, "each": 20}`, the first in `PORT`, the range
in `ROOST_PORTS`) and `TMPDIR` in its private /tmp.

A path in `write`, `read` or `hide` is absolute or starts with `~` (the job's HOME); it
may hold a glob (`~/.aider*`). One of `write` that ends with `/` is made (a directory,
0700) when it is missing; any other that is missing is left out. `moveInto` ({file:
folder}) moves a file its agent saves by a rename beside it into a folder the jail writes,
a link left in its place (roost.jobs.jail_places.move_into: Claude Code's ~/.claude.json).
"""

import logging
import os
import shutil

from roost.errors import bad_request
from roost.jobs import jail_places, profiles
from roost.unix import bwrap

log = logging.getLogger(__name__)

DEFAULT_HIDE = ("~/.ssh",)
DEFAULT_PORTS = {"first": 41000, "each": 20}
_MAX_PORT = 65535
_LISTS = ("write", "read", "hide")


class CannotRun(Exception):
    """The program cannot run (the text says why, as the keeper would say it)."""


class Jails:
    """The daemon's jails: whether bwrap makes them here (tried once, when first asked: a
    jail costs a few ms to try, and a daemon that starts no job never tries), and each
    start's argv in one (`wrap`)."""

    def __init__(self, home, socket_path, keeper_socket, roost_bin, probe=bwrap.probe):
        self.home = home
        self.socket_path = socket_path
        self.keeper_socket = keeper_socket
        self.roost_bin = roost_bin
        self._probe = probe
        self._result = None

    def wrap(self, launch, argv, env, cwd, job_dir, config, taken_ports):
        """(argv, env, ports): `argv` run in a jail made for this launch, `env` with its
        PORT, ROOST_PORTS and TMPDIR; CannotRun when its program cannot run. The program
        is looked for here, in the job's PATH, as the keeper would look for it (the keeper
        runs the jail's shell), and refused as it would be."""
        jail = settings(config, launch)
        ports = port_range(jail["ports"], taken_ports)
        if ports is not None:
            env["PORT"], env["ROOST_PORTS"] = str(ports[0]), f"{ports[0]}-{ports[1]}"
        env["TMPDIR"] = "/tmp"
        if not os.path.isdir(cwd):
            raise CannotRun(f"cannot change to {cwd}: No such file or directory")
        program = find_program(argv[0], env, cwd)
        if program is None:
            raise CannotRun(f"cannot run {argv[0]}: not found on PATH")
        problem = exec_problem(os.path.join(cwd, program))
        if problem is not None:
            raise CannotRun(f"cannot run {argv[0]}: {problem}")
        jail_places.move_into(jail["moveInto"], env.get("HOME"))
        places = jail_places.mounts(jail, cwd, job_dir, self.home, self.socket_path, self.keeper_socket,
                                    self.roost_bin, env.get("HOME"))
        wrapped = bwrap.jail_argv(self.get()[3], places, cwd, [program] + list(argv[1:]),
                                  network=jail["network"] == "on")
        return wrapped, env, ports

    def get(self):
        """(works, why not, version, programs)."""
        if self._result is None:
            programs = bwrap.find_programs(os.defpath + os.pathsep + os.environ.get("PATH", ""))
            works, why, version = self._probe(programs)
            self._result = (works, why, version, programs)
            if works:
                log.info("jobs run jailed (%s)", version or "bwrap")
            else:
                log.warning("jobs run without a jail: %s", why)
        return self._result


def _profile(config, launch):
    name = launch.get("profile")
    if not name:
        return {}
    try:
        return profiles.find(config, name)
    except Exception:       # a profile since removed from roost.json: roost.json's top still counts
        return {}


def decide(config, launch, availability):
    """(jailed, why not): whether a start of this launch runs in a jail."""
    if launch.get("person"):
        return False, "the person's own shell (--as-me) is never jailed"
    if launch.get("sandbox") is False:
        return False, "started with --no-sandbox (sandbox: false)"
    if config.get("sandbox") is False:
        return False, "roost.json says \"sandbox\": false"
    if _profile(config, launch).get("sandbox") is False:
        return False, f"its profile {launch.get('profile')} says \"sandbox\": false"
    works, why, _, _ = availability.get()
    if not works:
        return False, why
    return True, None


def settings(config, launch):
    """The jail's settings for a launch: roost.json's top `sandbox` and its profile's,
    lists joined, the profile's network and ports before the top's."""
    found = {"write": [], "read": [], "hide": list(DEFAULT_HIDE), "network": "on", "ports": dict(DEFAULT_PORTS),
             "moveInto": {}}
    profile = _profile(config, launch)
    _add_settings(found, "roost.json's sandbox", config.get("sandbox"))
    _add_settings(found, f"agentProfiles.{launch.get('profile')}.sandbox", profile.get("sandbox"))
    return found


def _add_settings(found, what, given):
    """One `sandbox` object's settings (roost.json's top, or a profile's) added to `found`."""
    if given is None or given is True:
        return
    if not isinstance(given, dict):
        raise bad_request(f"{what} must be false or an object (write, read, hide, network, ports)")
    for key in _LISTS:
        value = given.get(key)
        if value is None:
            continue
        if not isinstance(value, list) or not all(isinstance(item, str) and item for item in value):
            raise bad_request(f"{what}.{key} must be a list of paths")
        for item in value:
            if not (item.startswith("/") or item.startswith("~")):
                raise bad_request(f"{what}.{key}: {item!r} is neither absolute nor under ~")
        found[key] += value
    moves = given.get("moveInto")
    if moves is not None:
        if not isinstance(moves, dict) or not all(isinstance(key, str) and key.startswith(("/", "~"))
                                                  and isinstance(value, str) and value.startswith(("/", "~"))
                                                  for key, value in moves.items()):
            raise bad_request(f"{what}.moveInto must map files to folders, absolute or under ~")
        found["moveInto"].update(moves)
    network = given.get("network")
    if network is not None:
        if network not in ("on", "off"):
            raise bad_request(f"{what}.network must be \"on\" or \"off\"")
        found["network"] = network
    ports = given.get("ports")
    if ports is not None:
        found["ports"] = _check_ports(ports, f"{what}.ports")


def _check_ports(ports, what):
    if not isinstance(ports, dict) or not all(isinstance(ports.get(key), int) and not isinstance(ports.get(key), bool)
                                              for key in ("first", "each")):
        raise bad_request(f"{what} must be {{\"first\": port, \"each\": count}}")
    if not 1024 <= ports["first"] <= _MAX_PORT or not 1 <= ports["each"] <= _MAX_PORT - ports["first"] + 1:
        raise bad_request(f"{what}: first must be 1024-65535 and each at least 1, within 65535")
    return {"first": ports["first"], "each": ports["each"]}


def port_range(ports, taken):
    """[first, last] of the first range of `ports` no live job holds (`taken`: their
    first ports); None when every range is held."""
    first, each = ports["first"], ports["each"]
    start = first
    while start + each - 1 <= _MAX_PORT:
        if start not in taken:
            return [start, start + each - 1]
        start += each
    return None


def find_program(name, env, cwd):
    """`name` as the keeper would run it (execvp's search in the job's PATH), or None."""
    if "/" in name:
        return name if os.access(os.path.join(cwd, name), os.X_OK) else None
    return shutil.which(name, path=env.get("PATH", os.defpath))


def exec_problem(path):
    """Why the kernel would refuse to run `path`, said before a jail runs it (in a jail
    the refusal would come from inside, after the job was made): a file that starts
    neither with `#!` nor with an ELF header. None when it looks runnable."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(7)
    except OSError as error:
        return error.strerror
    if head.startswith(b"#!"):
        return None
    # ELF: the magic, a class (32/64 bits), a byte order and version 1.
    if len(head) == 7 and head[:4] == b"\x7fELF" and head[4] in (1, 2) and head[5] in (1, 2) and head[6] == 1:
        return None
    return "Exec format error"


def read_only_note(text):
    """What a job's end says when its output's tail shows a write its jail refused."""
    tail = "\n".join(text.splitlines()[-40:])
    if "Read-only file system" not in tail:
        return None
    return ("its output ends with \"Read-only file system\": its jail lets it write only its folder, its "
            "job directory, its /tmp and what sandbox.write names in roost.json (docs/security.md)")
