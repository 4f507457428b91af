"""Agent profiles: roost.json's and roost's built-in ones (CONTRACT.md "Agent profiles",
spec M30/M31/M40).

A launch that names a `profile` and leaves `command` empty gets the profile's command,
term, protocol and resume filled in; its task goes into the argv after `--` (`task:
"argv"`, `taskInArgv`) or is typed once the agent first waits (`task: "type"`, the default).
A profile of roost.json replaces a built-in one of the same name (roost.jobs.
builtin_profiles) whole.
"""

import json

from roost.errors import RoostError, bad_request
from roost.jobs import builtin_profiles, sessions
from roost.term import keys, patterns

TASK_MODES = ("type", "argv")
BUILT_IN = "built-in"
TERM_PATTERNS = ("waiting", "working", "dialog", "limit", "question", "choices")
# The readers of roost.spend.sources (the jobs layer does not import it: it ranks above).
SPEND_FROM = ("claude-code", "codex", "aider", "pi", "report")


def _users(config):
    profiles = config.get("agentProfiles") if isinstance(config, dict) else None
    return profiles if isinstance(profiles, dict) else {}


def find(config, name):
    """The profile named `name`: roost.json's, else the built-in one."""
    profile, _ = find_with_source(config, name)
    return profile


def find_with_source(config, name):
    """(profile, "roost.json" or "built-in")."""
    users = _users(config)
    if name in users:
        if not isinstance(users[name], dict):
            raise bad_request(f"agentProfiles.{name} in roost.json must be an object")
        return users[name], "roost.json"
    built_in = builtin_profiles.profiles().get(name)
    if built_in is not None:
        return built_in, BUILT_IN
    raise bad_request(f"no agent profile named {name!r} (roost.json's and the built-in ones: "
                      f"{', '.join(sorted(names(config))) or 'none'})")


def names(config):
    return set(_users(config)) | set(builtin_profiles.profiles())


def listing(config, config_path):
    """Every profile a launch may name, each with where it comes from (`source`: the
    roost.json path, or "built-in"; `replaces: "built-in"` when a roost.json profile
    takes a built-in one's place), what it runs (`command`, expanded) and the profile
    whole as written (`profile`: its `term` block, its command with `{bundle}/` kept)."""
    users = _users(config)
    built_in = builtin_profiles.profiles()
    shown = []
    for name in sorted(set(users) | set(built_in)):
        profile = users.get(name) if name in users else built_in[name]
        entry = {"name": name, "source": config_path if name in users else BUILT_IN}
        if name in users and name in built_in:
            entry["replaces"] = BUILT_IN
        if not isinstance(profile, dict):
            entry["error"] = "not an object"
            shown.append(entry)
            continue
        for key in ("title", "command", "task", "protocol", "resume", "recordedOn", "versionCommand"):
            if key in profile:
                entry[key] = profile[key]
        # Whole and as written ({bundle}/ kept): what a user copies into roost.json.
        entry["profile"] = json.loads(json.dumps(profile))
        if isinstance(entry.get("command"), list):
            entry["commandShown"] = builtin_profiles.readable(entry["command"])
        for key in ("command", "resume"):
            if isinstance(entry.get(key), list):
                entry[key] = builtin_profiles.expand(entry[key])   # what it really runs
        entry.setdefault("task", "type")
        entry["protocol"] = bool(profile.get("protocol"))
        try:
            check_term(profile.get("term"), f"agentProfiles.{name}.term")
        except RoostError as error:   # shown here; a launch refuses it
            entry["error"] = error.text
        shown.append(entry)
    return shown


def _argv(value, what):
    if not isinstance(value, list) or not value or not all(isinstance(item, str) and item for item in value):
        raise bad_request(f"{what} must be a non-empty list of strings")
    return list(value)


def check_term(term, what="term", linear=False):
    """DispatchArgs.term: {submit, settleMs, waiting?, working?, typeTask?}, and roost's
    own dialog?, question? and choices? (roost.term.reading); regexes must compile.
    `linear`: a term from the wire, whose patterns must run on RE2 (roost.term.patterns);
    the term then says so (`linear: true`), for the screen reader."""
    if term is None:
        return None
    if not isinstance(term, dict):
        raise bad_request(f"{what} must be an object")
    for key in TERM_PATTERNS:
        pattern = term.get(key)
        if pattern is None:
            continue
        if not isinstance(pattern, str):
            raise bad_request(f"{what}.{key} must be a string (a regular expression)")
        try:
            patterns.linear(pattern) if linear else patterns.trusted(pattern)
        except patterns.PatternError as error:
            raise bad_request(f"{what}.{key} is not a regular expression: {error}")
    for key in ("submit", "typeTask"):
        if term.get(key) is not None and not isinstance(term.get(key), str):
            raise bad_request(f"{what}.{key} must be a string")
    settle = term.get("settleMs")
    if settle is not None and (isinstance(settle, bool) or not isinstance(settle, (int, float)) or settle < 0):
        raise bad_request(f"{what}.settleMs must be a number of milliseconds")
    checked = dict(term)
    if linear:
        checked["linear"] = True
    else:
        checked.pop("linear", None)
    return checked


def provider(name, profile):
    """Whose usage limit a launch of the profile `name` meets: its `provider`, else its
    name (jobs of one provider share a limit)."""
    given = profile.get("provider")
    return given if isinstance(given, str) and given else name


def apply(launch, config, task):
    """Fill `launch` (the daemon's launch dict: argv, term, protocol, resumeCommand, ...)
    from the profile it names. Returns the text to type once the agent first waits, or
    None."""
    name = launch["profile"]
    profile = find(config, name)
    filled = not launch["argv"]
    if filled:
        launch["argv"] = _argv(profile.get("command"), f"agentProfiles.{name}.command")
    if launch.get("term") is None and profile.get("term") is not None:
        launch["term"] = check_term(profile.get("term"), f"agentProfiles.{name}.term")
    if launch.get("protocol") is None:
        launch["protocol"] = bool(profile.get("protocol"))
    if launch.get("person") is None:
        launch["person"] = profile.get("person") is True
    resume = profile.get("resume")
    if launch.get("resumeCommand") is None and resume is not None:
        launch["resumeCommand"] = _argv(resume, f"agentProfiles.{name}.resume")
    if launch.get("resumeCommand"):
        launch["resumable"] = True
    source = sessions.check_source(profile.get("sessionFrom"), f"agentProfiles.{name}.sessionFrom")
    if source is not None:
        launch["sessionFrom"] = source      # where the agent's own session id is found
    # issue 19: the text typed at a usage limit's reset (roost.jobs.limit_resume), and
    # whose limit it is (jobs of one provider share it).
    limit_resume = profile.get("limitResume")
    if not (limit_resume is None or limit_resume is False or (isinstance(limit_resume, str) and limit_resume)):
        raise bad_request(f"agentProfiles.{name}.limitResume must be a text, null or false")
    launch.setdefault("limitResume", limit_resume or None)
    menu = profile.get("limitMenu")       # the agent's own menu at its limit: the choice that waits
    if menu is not None:
        if not (isinstance(menu, dict) and isinstance(menu.get("choice"), str) and menu["choice"]
                and isinstance(menu.get("keys"), str) and menu["keys"] and set(menu) <= {"choice", "keys"}):
            raise bad_request(f"agentProfiles.{name}.limitMenu must be {{choice: text, keys: text}}")
        launch.setdefault("limitMenu", {"choice": menu["choice"], "keys": menu["keys"]})
    launch.setdefault("provider", provider(name, profile))
    # issue 29: where what the agent spends is read (roost.spend.sources).
    spend_from = profile.get("spendFrom")
    if spend_from is not None:
        if spend_from not in SPEND_FROM:
            raise bad_request(f"agentProfiles.{name}.spendFrom must be one of {', '.join(SPEND_FROM)}")
        launch.setdefault("spendFrom", spend_from)
    # issue 29: the keys that stop the agent's turn at once (a job parked at a budget gets
    # them once), named as `roost keys` names them.
    interrupt = profile.get("interrupt")
    if interrupt is not None:
        if not isinstance(interrupt, list) or not interrupt or not all(isinstance(key, str) for key in interrupt):
            raise bad_request(f"agentProfiles.{name}.interrupt must be a list of key names (as roost keys takes them)")
        for key in interrupt:
            try:
                keys.key_bytes(key)
            except keys.UnknownKey as error:
                raise bad_request(f"agentProfiles.{name}.interrupt: {error}")
        launch.setdefault("interrupt", list(interrupt))
    mode = profile.get("task", "type")
    if mode not in TASK_MODES:
        raise bad_request(f"agentProfiles.{name}.task must be one of {', '.join(TASK_MODES)}")
    if not task or launch.get("taskInArgv"):
        return None
    if mode == "argv":
        # After `--`: a task is text (an agent's, when a task of the board or a spawn
        # carries it), never an option of the agent's program (issue 26 item 5).
        launch["argv"] += ["--", task]
        launch["taskInArgv"] = True
        return None
    return task
