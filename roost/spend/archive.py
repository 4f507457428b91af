"""The spend of the jobs removed: `$ROOST_HOME/spend-archive.jsonl`, one line per job (its
tallies and what it is grouped by), appended as each is removed, so a task's and a
day's totals keep it (roost.spend.tracker)."""

from roost import codec


def read_archive(path):
    """The entries of the jobs removed ($ROOST_HOME/spend-archive.jsonl); a torn last
    line is left out."""
    try:
        with open(path, "rb") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return []
    found = []
    for line in lines:
        try:
            entry = codec.decode(line)
        except ValueError:
            continue
        if isinstance(entry, dict) and isinstance(entry.get("tally"), dict):
            found.append(entry)
    return found
