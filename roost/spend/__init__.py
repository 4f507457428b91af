"""What the fleet spends (issue 29): each job's tokens read from its agent's own records,
priced, summed by job, task, project, provider, model, day and host; the plan windows the
agents themselves write; budgets that park a job; admission of roost's own starts.

    follow.py       a file read from where it was last read (bounded memory)
    claude_code.py  Claude Code's transcripts: the last line of each response, once
    codex.py        Codex's rollouts: cumulative totals less what a fork inherited
    small_agents.py pi's session files, aider's analytics log, a protocol agent's report
    ledger.py       one job's tokens by day and model, and what it has counted
    prices.py       the dated price table (prices.json) and roost.json's `prices`
    sources.py      where a job's records are (its own environment, its session ids)
    watcher.py      inotify: which followed file changed, with no polling
    tracker.py      the daemon's part: every job's ledger kept current, its row's `spend`
    usage.py        the totals `roost usage` groups
"""
