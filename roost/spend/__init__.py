"""What the fleet spends (issue 29, docs/costs.md): each job's tokens read from its
agent's own records, priced, summed by job, task, project, provider, model, day and
host; the plan windows the agents themselves write; budgets that park a job; admission
of roost's own starts.

    follow.py       a file read from where it was last read (bounded memory)
    claude_code.py  Claude Code's transcripts: the last line of each response, once
    codex.py        Codex's rollouts: cumulative totals less what a fork inherited
    small_agents.py pi's session files, aider's analytics log, a protocol agent's report
    readers.py      each reader by its `spendFrom` name, one stretch of a file read
    ledger.py       one job's tokens by day and model, and what it has counted
    sources.py      where a job's records are (its own environment, its session ids)
    watcher.py      inotify: which followed file changed, with no polling
    tracker.py      the daemon's part: every job's ledger kept current, its row's `spend`
    archive.py      the spend of the jobs removed
    prices.py       the dated price table (prices.json) and roost.json's `prices`
    usage.py        the totals `roost usage` groups (also a CLI's: several machines added up)
    windows.py      the plan windows (Codex's rate_limits, Claude Code's status line)
    budgets.py      budgets that park a job, `roost budget allow`
    admission.py    roost's own starts against the budgets, the windows and maxLive
"""
