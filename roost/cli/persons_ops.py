"""The ops that are the person's: the person may send them and a process inside a job may
not (the daemon refuses them from the peer's process: roost.ops.callers). The CLI inside a
job says so before it sends one (issue 16), from this table of its own: the CLI imports
nothing of the daemon's. tests/unit/test_cli_refusals.py checks that it says what the
daemon's table says."""

OPS = frozenset({
    "attach", "attach-input", "attach-resize", "budget-allow", "budgets", "concierge", "concierge-ask",
    "concierge-order", "detach", "dispatch", "doctor", "events", "explain", "keys", "limit-resume", "limits",
    "notify", "peek", "pin", "prices", "rename", "reorder", "reply", "respawn", "rm", "schedule-add",
    "schedule-pause", "schedule-rm", "schedule-run", "schedules", "screen", "screen-stop", "shutdown", "stop",
    "subscribe", "timeline", "usage", "windows",
})
# An op with actions: the actions that are the person's.
ACTIONS = {
    "task": frozenset({"abort", "add", "approve", "assign", "back", "claim-paths", "cleanup", "comment", "commit",
                       "diff", "done", "drop", "merge", "pass", "pr", "prepare", "release", "release-paths",
                       "shelve", "start", "uncomment", "verify"}),
}


def is_the_persons(op, args=None):
    """The person may send it and a job's process may not."""
    if op in ACTIONS:
        return (args or {}).get("action") in ACTIONS[op]
    return op in OPS
