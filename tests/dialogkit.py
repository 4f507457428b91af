"""A terminal agent that shows dialogs (tests/agents), and its rows while one is shown."""

from jobkit import write_config


TERM = {"settleMs": 200, "waiting": r"^prompt>$",
        "dialog": r"^(?P<question>Do you trust the files in this folder\?)$"}


def launch(daemon, cwd, command, task=None, term=TERM, profile="tui"):
    write_config(daemon.home, {"agentProfiles": {profile: {"command": command, "task": "type", "term": term}}})
    args = {"kind": "shell", "cwd": str(cwd), "command": [], "env": {}, "name": "", "sessionFile": "",
            "origin": "dispatch", "profile": profile}
    if task is not None:
        args["task"] = task
    return daemon.call("dispatch", **args)["id"]


def in_dialog(current):
    return current["waitingFor"] == "dialog"
