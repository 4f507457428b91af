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


# A reader whose agent writes a response as a run of lines, each superseding the one
# before: the bytes that name a line's response, so that only a run's last line is parsed.
RUNS = {"claude-code": claude_code.response_of}


def read_batch(follower, kind, file_state):
    """What the next stretch of one file counts, as a Batch, and the
    readings of the plan's windows it carries."""
    keep, take = READERS[kind]
    run_of = RUNS.get(kind)
    batch, readings = Batch(), []
    pending = []              # [its response, a line] that the run's next line may supersede

    def counted(line):
        reading = take(batch, line, file_state)
        if reading is not None:
            readings.append(reading)

    def in_runs(line):
        # The same figures as counting every line (the last line of a response wins), with
        # a run's earlier lines not parsed; a response's day is then its last line's.
        response = run_of(line)
        if pending and (response is None or response != pending[0]):
            counted(pending[1])
            pending.clear()
        if response is None:
            counted(line)
        else:
            pending[:] = (response, line)

    read = follower.read(counted if run_of is None else in_runs, keep, BATCH_BYTES)
    if pending:
        counted(pending[1])
    return batch, readings, read >= BATCH_BYTES
