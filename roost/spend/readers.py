"""Each agent's reader by its `spendFrom` name, and the reading of one stretch of a file
(in the threadpool for a big one, in the loop for a live session's next lines)."""

import os

from roost.spend import claude_code, codex, small_agents, sources
from roost.spend.ledger import Batch

BATCH_BYTES = 8 << 20          # read at most this much of a file at a time (bounded memory)

READERS = {
    "claude-code": (claude_code.keep, claude_code.take),
    "codex": (codex.keep, codex.take),
    "pi": (small_agents.pi_keep, small_agents.pi_take),
    "aider": (small_agents.aider_keep, small_agents.aider_take),
}


def grown(follower):
    try:
        return os.stat(follower.path).st_size - follower.offset
    except OSError:
        return 0


def reader_of(job):
    """The job's reader (`spendFrom`), or "report" for a protocol agent that reports its
    usage, or None: roost cannot read what it spends."""
    kind = job.launch.get("spendFrom")
    if kind in sources.KINDS:
        return kind
    if job.record.get("usage") is not None:
        return "report"
    return None


def read_batch(follower, kind, file_state):
    """What the next stretch of one file counts, as a Batch, and the
    readings of the plan's windows it carries."""
    keep, take = READERS[kind]
    batch, readings = Batch(), []

    def counted(line):
        reading = take(batch, line, file_state)
        if reading is not None:
            readings.append(reading)

    read = follower.read(counted, keep, BATCH_BYTES)
    return batch, readings, read >= BATCH_BYTES
