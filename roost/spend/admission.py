"""Admission of the starts roost makes on its own (issue 29 items 5 and 6): a schedule's
run (and `schedule run`), a task's start, the concierge's launch. Not the person's own
`roost run`, which is told instead (`notice`).

For a launch of a profile, in this order:
- a budget it would break by starting (the fleet's day, its provider's day, its task's:
  roost.spend.budgets) keeps it from starting: `refuse`, with which budget;
- a plan window of its provider used at or above `admitBelowPercent` (roost.json,
  default 90) makes it `wait` for that window's reset, as a known usage limit does;
- past `maxLive` sessions of its provider running at once (roost.json: a number for
  every provider, or {"anthropic": 3}; unset by default) it is `queue`d: the queue keeps
  the order the starts came in, and the head is told to try again when a session of
  that provider ends or parks (at a limit, at a budget).

A session counts as live while its run is active and it is neither parked at a budget
nor waiting at a usage limit.
"""

import logging

from roost.errors import RoostError
from roost.jobs import limits, profiles

log = logging.getLogger(__name__)

DEFAULT_ADMIT_BELOW = 90


class Verdict:
    __slots__ = ("kind", "why", "provider", "resets_at")

    def __init__(self, kind, why, provider=None, resets_at=None):
        self.kind, self.why, self.provider, self.resets_at = kind, why, provider, resets_at

    def __repr__(self):
        return f"Verdict({self.kind!r}, {self.why!r})"


class Admission:
    def __init__(self, registry, config, budgets, windows, clock):
        self.registry = registry
        self.config = config
        self.budgets = budgets
        self.windows = windows
        self.clock = clock            # roost.clock: whether a limit's or a window's reset is still to come
        self.queues = {}              # provider -> [key, ...] in the order they came
        self.on_free = []             # fn(provider): a slot may be free (the queued try again)

    def provider_of(self, args):
        """The provider a launch spends, or None (no profile, or one that does not resolve)."""
        name = args.get("profile") if isinstance(args, dict) else None
        if not isinstance(name, str) or not name:
            return None
        try:
            profile = profiles.find(self.config.current(), name)
        except RoostError:
            return None
        return profiles.provider(name, profile)

    def admit_below(self):
        value = self.config.get("admitBelowPercent")
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value <= 100
        return value if ok else DEFAULT_ADMIT_BELOW

    def max_live(self, provider):
        value = self.config.get("maxLive")
        if isinstance(value, dict):
            value = value.get(provider)
        return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None

    def live(self, provider):
        return sum(1 for job in self.registry.all() if job.run.active and limits.provider_of(job) == provider
                   and not job.record.get("budgetHold") and job.record.get("waitingFor") != "limit")

    def check(self, args, key=None, task=None):
        """None: it may start now; else a Verdict (refuse, wait or queue). `key` names the
        start in its provider's queue (a schedule's, a task's), so it keeps its place."""
        provider = self.provider_of(args)
        if provider is None:
            return None
        found = self.budgets.over(provider=provider, task=task, at_start=True)
        if found is not None:
            return Verdict("refuse", f"not started: {found[1]}", provider)
        now = self.clock.now_ms()
        known = limits.known_reset(self.registry.all(), provider, now)
        if known is not None:
            return Verdict("wait", f"the {provider} usage limit resets at {limits.clock(known)}", provider, known)
        full = self.windows.full(provider, self.admit_below(), now)
        if full is not None:
            return Verdict("wait", f"the {provider} {full[0]} window is used at or above {self.admit_below():g}%: "
                                   f"it resets at {limits.clock(full[1])}", provider, full[1])
        most = self.max_live(provider)
        queue = self.queues.setdefault(provider, [])
        if most is not None:
            ahead = queue.index(key) if key in queue else len(queue)
            if self.live(provider) + ahead >= most:
                if key is not None and key not in queue:
                    queue.append(key)
                return Verdict("queue", f"queued: {most} {provider} session{'' if most == 1 else 's'} run at once "
                                        f"(maxLive), {ahead} before it", provider)
        if key in queue:
            queue.remove(key)
        return None

    def prune(self, prefix, keys):
        """Of the queued starts named `prefix...`, keep only `keys` (a schedule removed or
        paused while queued gives its place up)."""
        for provider, queue in self.queues.items():
            self.queues[provider] = [key for key in queue if not key.startswith(prefix) or key in keys]

    def row_changed(self, after, before):
        """A session that ended or parked frees a slot of its provider."""
        if before is None or not self.queues:
            return
        was = before["state"] in ("working", "blocked") and before.get("waitingFor") not in ("limit", "budget")
        now = after["state"] in ("working", "blocked") and after.get("waitingFor") not in ("limit", "budget")
        if was and not now:
            job = self.registry.get(after["id"])
            provider = limits.provider_of(job) if job is not None else None
            if provider and self.queues.get(provider):
                for hook in list(self.on_free):
                    try:
                        hook(provider)
                    except Exception:
                        log.exception("an admission hook failed")
