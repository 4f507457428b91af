"""`roost __complete WORD...` (hidden): what may come next on a command line, one
candidate a line, for the shells' completion scripts (`roost completion SHELL`). The
words are those after `roost`, the last one the word being completed (maybe empty).

Commands and their words come from the commands' own usage texts (docopt's), so a new
command completes without a line here; a job's `<id>` completes with the ids and names
of the daemon's jobs, asked without starting a daemon (a Tab must never start one) and
with a short timeout. It runs on every Tab: it imports only the one command's module.
"""

import os
import re

ID_TIMEOUT_S = 1.0
# Commands whose <id> is a task of the board, not a job.
TASK_IDS = ("task",)


def candidates(words, env, socket_override=None):
    from roost.cli.commands import COMMANDS

    words = list(words) or [""]
    current, before = words[-1], words[:-1]
    if not before:
        names = list(COMMANDS) + ["--help", "--version", "--socket=", "--host="]
        return [name for name in names if name.startswith(current)]
    command = before[0]
    entry = COMMANDS.get(command)
    if entry is None:
        return []
    doc = usage_of(entry[0])
    if current.startswith("-"):
        return sorted({option for option in re.findall(r"--[a-z][a-z0-9-]*=?", doc) if option.startswith(current)})
    typed = [word for word in before[1:] if not word.startswith("-")]
    found = set()
    wants_id = False
    for usage in _usages(doc, command):
        positionals = [token for token in usage if not token.startswith("-")]
        if len(positionals) <= len(typed) or not _fits(positionals, typed):
            continue
        following = positionals[len(typed)]
        if following == "<topic>":      # `roost help TOPIC`: the manual's pages
            from roost.cli import manual

            found.update(name for name, _ in manual.topics())
        elif following.startswith("<"):
            wants_id = wants_id or (following == "<id>" and command not in TASK_IDS)
        else:
            found.update(following.split("|"))
    if wants_id:
        found.update(job_words(env, socket_override))
    return sorted(word for word in found if word.startswith(current))


def usage_of(module):
    """A command module's docstring, read from its file (importing the module would
    import the CLI's context: a third of a Tab's time); imported in a frozen build."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "commands", module + ".py")
    try:
        with open(path, encoding="utf-8") as handle:
            found = re.match(r'\s*(?:#.*\n\s*)*"""(.*?)"""', handle.read(), re.DOTALL)
        if found:
            return found.group(1)
    except OSError:
        pass
    import importlib

    return importlib.import_module(f"roost.cli.commands.{module}").__doc__ or ""


def _usages(doc, command):
    """Each usage line's tokens after `roost COMMAND`, brackets and ellipses dropped."""
    block = doc.split("Usage:", 1)[-1].split("\n\n", 1)[0]
    for line in block.splitlines():
        # (a | b | c): one word of several, kept as one token "a|b|c"
        line = re.sub(r"\(([^()]*)\)", lambda match: "|".join(part.strip() for part in match.group(1).split("|")), line)
        tokens = re.findall(r"<[^>]+>|[^\s\[\]().]+", line)
        if tokens[:2] == ["roost", command]:
            yield tokens[2:]


def _fits(positionals, typed):
    return all(token.startswith("<") or word in token.split("|") for token, word in zip(positionals, typed))


def job_words(env, socket_override):
    """The daemon's jobs' ids and names; nothing when no daemon answers at once."""
    from roost.client.connection import Lost, Unreachable, connect

    try:
        client = connect(env, socket_override, autostart=False, timeout=ID_TIMEOUT_S)
    except (Unreachable, OSError):
        return []
    try:
        jobs = client.call("list", {})["jobs"]
    except (Lost, OSError, Exception):
        return []
    finally:
        client.close()
    words = []
    for job in jobs:
        words.append(job["id"])
        name = job.get("name") or ""
        if name and name.isprintable() and " " not in name:
            words.append(name)
    return words


def main(words, env, stdout, socket_override=None):
    for word in candidates(words, env, socket_override):
        stdout.write(word + "\n")
    return 0
