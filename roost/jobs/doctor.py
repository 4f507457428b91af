"""`roost doctor`: is each agent of a profile there, and is it a version its profile
was checked on?

A profile's patterns read an agent's screen as that agent drew it when they were
written (`recordedOn`); the agent's next release may draw it otherwise. For each
profile this runs its `versionCommand` (in the environment and folder a job of it
would get), reads the version out of what it prints (stdout or stderr: pi prints its
version on stderr) and says what a user should know: not found, untested on this
version, its bundled files missing, its term refused. A job whose screen its profile
cannot read says so in its row too (`unreadSince`).
"""

import logging
import os
import re
import shutil
import subprocess

import gevent

from roost.bundle import userenv
from roost.jobs import builtin_profiles, jail_places, profiles

log = logging.getLogger(__name__)

VERSION_TIMEOUT_S = 20.0
VERSION = re.compile(r"(?<![\w.])v?(\d+\.\d+(?:\.\d+)?(?:[-+.][0-9A-Za-z.]+)?)")
OUTPUT_LIMIT = 300

# The verdict of one profile, worst first.
NOT_FOUND, BROKEN, UNTESTED, NO_VERSION, UNCHECKED, OK = (
    "not-found", "broken", "untested", "no-version", "unchecked", "ok")


def check_all(config, config_path, env=None, cwd=None):
    """{"profiles": [one check per profile, by name]}."""
    environ = userenv.user_environ()
    environ.update(env or {})
    where = cwd if cwd and os.path.isdir(cwd) else os.path.expanduser("~")
    listed = profiles.listing(config, config_path)
    checks = [gevent.spawn(check, entry, config, environ, where) for entry in listed]
    gevent.joinall(checks)
    return {"profiles": [greenlet.get() for greenlet in checks]}


def check(entry, config, environ, cwd):
    """One profile's check: {name, source, verdict, program, path, version,
    recordedOn, notes}."""
    name = entry["name"]
    result = {"name": name, "source": entry["source"], "title": entry.get("title"),
              "verdict": OK, "program": None, "path": None, "version": None,
              "recordedOn": list(entry.get("recordedOn") or []), "notes": []}
    notes = result["notes"]
    if entry.get("replaces"):
        notes.append(f"roost.json's profile {name!r} replaces the built-in one: the built-in recordings "
                     "do not vouch for it")
    if entry.get("error"):
        return _verdict(result, BROKEN, f"a launch of it is refused: {entry['error']}")
    profile = profiles.find(config, name)
    command = profile.get("command")
    if not isinstance(command, list) or not command or not all(isinstance(word, str) for word in command):
        return _verdict(result, BROKEN, "its command is not a list of strings")
    missing = builtin_profiles.missing_files(command + list(profile.get("resume") or []))
    if missing:
        _verdict(result, BROKEN, f"roost's own file {missing[0]} is missing (an incomplete install of roost)")
    notes.extend(jail_places.file_notes(profile, environ.get("HOME")))
    program = command[0]
    result["program"] = program
    result["path"] = _which(program, environ, cwd)
    if result["path"] is None:
        return _verdict(result, NOT_FOUND, f"{program} is not on PATH: `roost run --profile {name}` "
                                           f"cannot start it")
    version_command = entry.get("versionCommand")
    if not version_command:
        return _verdict(result, UNCHECKED, "the profile names no versionCommand: its version is not checked")
    output, problem = _run_version(version_command, environ, cwd)
    if problem is not None:
        return _verdict(result, NO_VERSION, problem)
    found = VERSION.search(output)
    if found is None:
        return _verdict(result, NO_VERSION, f"{' '.join(version_command)} printed no version: "
                                            f"{' '.join(output.split())[:OUTPUT_LIMIT]!r}")
    version = result["version"] = found.group(1)
    recorded = result["recordedOn"]
    if not recorded:
        return _verdict(result, UNCHECKED, f"{version} is installed; the profile names no versions "
                                           "it was recorded on (recordedOn)")
    if version not in recorded:
        return _verdict(result, UNTESTED,
                        f"{program} {version} is installed; the profile was recorded on "
                        f"{', '.join(recorded)}: its screen patterns are untested on {version} (a job whose "
                        "screen they cannot read says so in its row, unreadSince)")
    return result


_RANK = (NOT_FOUND, BROKEN, UNTESTED, NO_VERSION, UNCHECKED, OK)


def _verdict(result, verdict, note):
    """Add `note`; the result's verdict is the worst one said."""
    result["notes"].append(note)
    if _RANK.index(verdict) < _RANK.index(result["verdict"]):
        result["verdict"] = verdict
    return result


def _which(program, environ, cwd):
    if "/" in program:
        path = program if os.path.isabs(program) else os.path.join(cwd, program)
        return path if os.path.isfile(path) and os.access(path, os.X_OK) else None
    return shutil.which(program, path=environ.get("PATH", os.defpath))


def _run_version(argv, environ, cwd):
    """(what `argv` printed, stdout then stderr; None) or (None, why it could not tell)."""
    if not isinstance(argv, list) or not all(isinstance(word, str) and word for word in argv):
        return None, "its versionCommand is not a list of strings"
    shown = " ".join(argv)
    try:
        done = subprocess.run(builtin_profiles.expand(argv), env=environ, cwd=cwd, stdin=subprocess.DEVNULL,
                              capture_output=True, timeout=VERSION_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return None, f"{shown} did not answer within {VERSION_TIMEOUT_S:.0f} s"
    except (OSError, ValueError) as error:
        return None, f"{shown} could not run: {error}"
    text = (done.stdout + b"\n" + done.stderr).decode("utf-8", "replace")
    if done.returncode != 0 and not VERSION.search(text):
        return None, f"{shown} failed (exit status {done.returncode}): {' '.join(text.split())[:OUTPUT_LIMIT]!r}"
    return text, None
