"""Budgets that stop work (issue 29 item 5), off unless roost.json sets them:

    "budgets": {"job": {"usd": 5}, "task": {"usd": 20}, "day": {"usd": 50},
                "provider": {"anthropic": {"day": {"usd": 30}}}}

`tokens` may stand instead of `usd` (a job's input and output tokens as roost counts
them, the cache included). A day is the user's local day.

A job whose spend goes over one of them (its own, its task's, the fleet's today, its
provider's today) is parked: its record's `budgetHold` {budget, why, at}, its row
`blocked`, `waitingFor: "budget"`; it is interrupted once with its profile's
`interrupt` keys (Esc for the built-in agents); one without them parks at its next
wait. While parked roost types nothing into it and delivers nothing to it (replies,
sends, schedules, the concierge, limit resumes): what is sent meanwhile waits on its
book and goes once it is allowed more (roost.jobs.replies). `roost budget allow ID`
lifts the hold until the day rolls over; `--usd N` (or `--tokens N`) lets it spend N
more than it has spent. A hold at the day's budgets lifts when the day rolls over. The
notifier tells a person once, as for a usage limit.

A figure roost cannot price (a model without a price) is not judged against a budget in
USD: unknown is not 0, and not over either.
"""

import logging
import time

from roost.errors import bad_request
from roost.spend import tokens

log = logging.getLogger(__name__)

UNITS = ("usd", "tokens")


def _limit(value):
    """{unit: amount} of a budget's setting, or None when it sets none."""
    if not isinstance(value, dict):
        return None
    for unit in UNITS:
        amount = value.get(unit)
        if isinstance(amount, (int, float)) and not isinstance(amount, bool) and amount >= 0:
            return {unit: amount}
    return None


def amount_text(unit, amount):
    return f"${amount:,.2f}" if unit == "usd" else f"{int(amount):,} tokens"


def next_day_ms(now_ms):
    """A second past the local midnight that follows `now_ms`."""
    return int(time.mktime(time.localtime(now_ms / 1000)[:3] + (24, 0, 1, 0, 0, -1)) * 1000)


class Budgets:
    def __init__(self, registry, config, tracker, replies, bus, clock):
        self.registry = registry
        self.config = config
        self.tracker = tracker
        self.replies = replies
        self.bus = bus
        self.clock = clock            # roost.clock: the user's day, and when it rolls over
        self._rollover = None         # the timer at the next day (or within the hour)
        self._day = None              # the day the timer was armed on

    def start(self):
        self._arm_roll_over()

    def stop(self):
        if self._rollover is not None:
            self._rollover.kill(block=False)
            self._rollover = None

    def today(self):
        """The user's local day (YYYY-MM-DD) on roost's clock."""
        return tokens.day_of_ms(self.clock.now_ms())

    def settings(self):
        value = self.config.get("budgets")
        return value if isinstance(value, dict) else {}

    # -- what is spent against what ----------------------------------------------------

    def _spent(self, by_model, unit):
        """The amount in `unit` of {model: count}, or None when it cannot be priced."""
        if unit == "tokens":
            whole = tokens.zero()
            for count in by_model.values():
                tokens.add(whole, count)
            return whole[0] + whole[1]
        usd, _ = self.tracker.prices().usd(by_model)
        return usd

    def scopes(self, job_id=None, provider=None, task=None):
        """The budgets that apply, each (name, limit {unit: amount}, {model: count} spent
        against it): the job's own, its task's, the fleet's today, its provider's today."""
        settings = self.settings()
        today = self.today()
        found = []
        job_limit = _limit(settings.get("job"))
        if job_limit and job_id is not None:
            found.append(("job", job_limit, lambda: self.tracker.totals(job_id=job_id)))
        task_limit = _limit(settings.get("task"))
        if task_limit and task is not None:
            found.append(("task", task_limit, lambda: self.tracker.totals(task=task)))
        day_limit = _limit(settings.get("day"))
        if day_limit:
            found.append(("day", day_limit, lambda: self.tracker.totals(day=today)))
        providers = settings.get("provider") if isinstance(settings.get("provider"), dict) else {}
        provider_limit = _limit((providers.get(provider) or {}).get("day")) if provider else None
        if provider_limit:
            found.append((f"{provider} day", provider_limit, lambda: self.tracker.totals(day=today, provider=provider)))
        return found

    def over(self, job_id=None, provider=None, task=None, at_start=False):
        """(budget, why) of the first budget spent (over it, or at it for a start), or None."""
        for name, limit, spent in self.scopes(job_id, provider, task):
            unit, amount = next(iter(limit.items()))
            value = self._spent(spent(), unit)
            if value is None:
                continue
            if value > amount or (at_start and value >= amount):
                return name, (f"the {name} budget of {amount_text(unit, amount)} is spent "
                              f"({amount_text(unit, value)})")
        return None

    # -- a job's spend ---------------------------------------------------------------------

    def spent(self, job, spend):
        """The tracker's hook: a job's spend grew. Over a budget: parked."""
        if job.record.get("budgetHold") or not job.run.active or not self.settings():
            return
        allowed = self._allowance(job)
        if allowed == "all":
            return
        found = self.over(job.id, self.tracker.provider_of(job.id), self.tracker.task_of(job.id))
        if found is None:
            return
        if isinstance(allowed, dict):
            unit, more = allowed["unit"], allowed["more"]
            own = self._spent(self.tracker.totals(job_id=job.id), unit)
            if own is None or own <= allowed["from"] + more:
                return
        self.park(job, *found)

    def _allowance(self, job):
        """What `budget allow` gave the job today: "all", {unit, more, from}, or None."""
        allowed = job.record.get("budgetAllowed")
        if not isinstance(allowed, dict) or allowed.get("day") != self.today():
            return None
        return "all" if allowed.get("all") else allowed

    def park(self, job, budget, why):
        hold = {"budget": budget, "why": why, "at": self.clock.now_ms()}
        self.registry.change(job, budgetHold=hold)
        log.info("job %s: parked: %s", job.id, why)
        self.bus.publish("budget", f"parked: {why}", job.id, job.name, budget=budget)
        keys = job.launch.get("interrupt")
        terminal = job.terminal
        if keys and terminal is not None and not terminal.closed:
            try:
                terminal.send_keys(keys)       # once: it stops what it does, and waits
            except Exception:
                log.exception("job %s: its interrupt keys could not be pressed", job.id)

    def allow(self, job, unit=None, more=None):
        """`budget allow`: the hold lifted; with `more`, that much more than it spent."""
        if unit is not None and unit not in UNITS:
            raise bad_request(f"allow more in one of {', '.join(UNITS)}")
        if more is not None and (isinstance(more, bool) or not isinstance(more, (int, float)) or more < 0):
            raise bad_request("more must be a number at least 0")
        today = self.today()
        if more is None:
            allowed = {"day": today, "all": True}
        else:
            spent = self._spent(self.tracker.totals(job_id=job.id), unit)
            allowed = {"day": today, "unit": unit, "more": more, "from": spent or 0}
        held = job.record.get("budgetHold")
        self.registry.change(job, budgetHold=None, budgetAllowed=allowed)
        if held:
            what = "until the day rolls over" if more is None else f"{amount_text(unit, more)} more"
            self.bus.publish("budget", f"allowed {what}", job.id, job.name)
            self.replies.released(job)
        return {"id": job.id, "allowed": allowed, "wasHeld": bool(held)}

    # -- the day ---------------------------------------------------------------------------

    def _arm_roll_over(self):
        """The timer at the next local midnight, looked at again within the hour (a clock
        set anew, a zone's change of hour)."""
        now = self.clock.now_ms()
        self._day = tokens.day_of_ms(now)
        self._rollover = self.clock.call_at(max(now + 1000, min(next_day_ms(now), now + 3_600_000)),
                                            self._roll_over)

    def _roll_over(self):
        """At local midnight, the holds at a day's budget lift (the day's spend starts
        again); a job's or a task's stay until the person allows more."""
        try:
            if self.today() != self._day:
                self._lift_day_holds()
        except Exception:
            log.exception("the budgets' day roll-over failed")
        self._arm_roll_over()

    def _lift_day_holds(self):
        for job in self.registry.all():
            hold = job.record.get("budgetHold")
            if hold and str(hold.get("budget", "")).endswith("day"):
                self.registry.change(job, budgetHold=None)
                self.bus.publish("budget", "the day rolled over: allowed again", job.id, job.name)
                self.replies.released(job)
