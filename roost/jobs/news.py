"""What of a job's change is news for the feed (M43): a state change that matters, in
one line. A row's text changing on its own is not news; its state moving, or what it
waits for, is."""


def state_news(before, after):
    """The feed's line for a change from row `before` to row `after`, or None."""
    if before is None or before.get("state") is None:
        return None      # its first start is the runner's `start`
    keys = ("state", "status", "waitingFor")
    if all(before.get(key) == after.get(key) for key in keys):
        return None
    return describe(after)


def describe(row):
    state = row.get("state")
    summary = row.get("summary")
    if state == "working":
        return "working"
    if state == "blocked":
        waiting_for = row.get("waitingFor")
        if waiting_for == "dialog":
            return f"shows a dialog: {row.get('question') or summary or ''}".rstrip(": ")
        if waiting_for == "first-prompt":
            return "waits for its first task"     # only an agent that takes one (roost.term.kernel_reading)
        if waiting_for == "limit":
            return f"stopped at its usage limit: {summary or ''}".rstrip(": ")
        if row.get("status") is None:
            return "in a state roost cannot read (?)"
        return f"waits for an answer: {row.get('question') or summary or ''}".rstrip(": ")
    if state == "done":
        return f"done: {summary}" if summary else "done"
    if state == "failed":
        return f"failed: {row.get('error') or 'no reason given'}"
    if state == "stopped":
        return "stopped for idleness" if row.get("reaped") else "stopped"
    return str(state)
