"""What the fleet spends (issue 29): `usage`, the totals grouped as asked, and `prices`,
the price table in force (roost's own ops, a person's: `roost usage`)."""

from roost.ops import args as read
from roost.ops import op
from roost.spend import usage


def usage_args(args):
    """{by, since}: `by` one of usage.BY (default job), `since` a first day or None."""
    return {"by": read.choice(args, "by", usage.BY, default="job"),
            "since": usage.since_day(read.text(args, "since", default=None))}


@op("usage")
def usage_op(call):
    wanted = usage_args(call.args)
    spend = call.services.spend
    return usage.group(spend.entries(), wanted["by"], wanted["since"], spend.prices())


@op("prices")
def prices_op(call):
    return call.services.spend.prices().listing()


@op("windows")
def windows_op(call):
    """The plan windows each provider's agents last wrote: percent used, when each
    resets, how old the reading is."""
    return {"windows": call.services.windows.listing()}


def allow_args(args):
    """{id, unit, more}: `usd` or `tokens` N more than the job spent, or neither (lifted
    until the day rolls over)."""
    job = read.text(args, "id", min_length=1)
    for unit in ("usd", "tokens"):
        if args.get(unit) is not None:
            return {"id": job, "unit": unit, "more": read.number(args, unit)}
    return {"id": job, "unit": None, "more": None}


@op("budget-allow")
def budget_allow(call):
    wanted = allow_args(call.args)
    job = call.services.jobs.resolve(wanted["id"])
    return call.services.budgets.allow(job, wanted["unit"], wanted["more"])


@op("budgets")
def budgets_op(call):
    """The budgets in force, what is spent against the fleet's, and the parked jobs."""
    services = call.services
    budgets = services.budgets
    held = [{"id": job.id, "name": job.name, **job.record["budgetHold"]} for job in services.jobs.all()
            if job.record.get("budgetHold")]
    return {"budgets": budgets.settings(), "over": (budgets.over() or (None, None))[1], "held": held}
