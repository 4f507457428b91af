"""Agent profiles from roost.json (CONTRACT.md "Agent profiles", spec M30/M31/M40).

A launch that names a `profile` and leaves `command` empty gets the profile's command,
term, protocol and resume filled in; its task goes into the argv (`task: "argv"`,
`taskInArgv`) or is typed once the agent first waits (`task: "type"`, the default).
"""

import re

from roost.errors import bad_request

TASK_MODES = ("type", "argv")


def find(config, name):
    profiles = config.get("agentProfiles") if isinstance(config, dict) else None
    profile = profiles.get(name) if isinstance(profiles, dict) else None
    if not isinstance(profile, dict):
        known = ", ".join(sorted(profiles)) if isinstance(profiles, dict) and profiles else "none"
        raise bad_request(f"no agent profile named {name!r} in roost.json (profiles: {known})")
    return profile


def _argv(value, what):
    if not isinstance(value, list) or not value or not all(isinstance(item, str) and item for item in value):
        raise bad_request(f"{what} must be a non-empty list of strings")
    return list(value)


def check_term(term, what="term"):
    """DispatchArgs.term: {submit, settleMs, waiting?, working?, typeTask?}, and roost's
    own dialog? and choices? (roost.term.reading); regexes must compile."""
    if term is None:
        return None
    if not isinstance(term, dict):
        raise bad_request(f"{what} must be an object")
    for key in ("waiting", "working", "dialog", "choices"):
        pattern = term.get(key)
        if pattern is None:
            continue
        if not isinstance(pattern, str):
            raise bad_request(f"{what}.{key} must be a string (a regular expression)")
        try:
            re.compile(pattern)
        except re.error as error:
            raise bad_request(f"{what}.{key} is not a regular expression: {error}")
    for key in ("submit", "typeTask"):
        if term.get(key) is not None and not isinstance(term.get(key), str):
            raise bad_request(f"{what}.{key} must be a string")
    settle = term.get("settleMs")
    if settle is not None and (isinstance(settle, bool) or not isinstance(settle, (int, float)) or settle < 0):
        raise bad_request(f"{what}.settleMs must be a number of milliseconds")
    return dict(term)


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
    resume = profile.get("resume")
    if launch.get("resumeCommand") is None and resume is not None:
        launch["resumeCommand"] = _argv(resume, f"agentProfiles.{name}.resume")
    if launch.get("resumeCommand"):
        launch["resumable"] = True
    mode = profile.get("task", "type")
    if mode not in TASK_MODES:
        raise bad_request(f"agentProfiles.{name}.task must be one of {', '.join(TASK_MODES)}")
    if not task or launch.get("taskInArgv"):
        return None
    if mode == "argv":
        launch["argv"].append(task)
        launch["taskInArgv"] = True
        return None
    return task
