"""What the fleet spends (issue 29): `usage`, the totals grouped as asked; `prices`, the
price table in force; `windows`, the plans' windows the agents wrote; `budgets` and
`budget-allow`, the budgets in force and a parked job let go on (roost's own ops, a
person's: `roost usage`, `roost budget`)."""

from roost.contract import Anything, Choice, Flag, Integer, ListOf, MapOf, Number, Shape, Text
from roost.ops import op
from roost.ops.jobs import FINDS, JOB
from roost.ops.shapes import BUDGET_HOLD, SPEND_TOTAL, TOKENS
from roost.spend import usage

USAGE_GROUP = Shape({
    "key": Text("The job's id, the task's id, the project, provider, model, day (YYYY-MM-DD) or host; null: none "
                "(the jobs started on no task).", nullable=True),
    "tokens": TOKENS, "usd": Number("Null when a model in it has no price.", nullable=True),
    "unpriced": ListOf(Text(), "The models in it without a price."),
    "jobs": ListOf(Text(), "The jobs that spent in it."),
}, name="UsageGroup")

PRICE = Shape({field: Number("USD per million tokens.", nullable=True)
               for field in ("input", "output", "cacheRead", "cacheWrite")}, name="Price")

WINDOW = Shape({
    "provider": Text(), "window": Text("5h, 7d, or its length (`2h`, `90m`)."),
    "minutes": Integer("The window's length."), "usedPercent": Number("0-100, as the agent last wrote it."),
    "resetsAt": Number("When it resets (ms), when the agent said.", nullable=True),
    "at": Number("When it was read (ms)."), "ageMs": Number("How old the reading is."),
    "stale": Flag("Its reset has passed: the figure is from before it."),
    "source": Text("What it was read from (codex, claude-code status line, ...)."),
    "job": Text("The job whose records said it.", nullable=True),
}, name="PlanWindow", doc="issue 29: a provider's plan window as its agents last wrote it.")


@op("usage", args={
    "by": Choice(usage.BY, "How the totals are grouped.", default="job"),
    "since": Text("The first day counted: YYYY-MM-DD, today, yesterday or Nd (N days back); absent: every day.",
                  default=None),
}, result={"groups": ListOf(USAGE_GROUP, "In the order of their keys; null last."), "total": SPEND_TOTAL},
    doc="What the jobs spent (kept after they are removed), grouped as asked.")
def usage_op(call):
    spend = call.services.spend
    since = usage.since_day(call.args["since"], call.services.budgets.today())
    return usage.group(spend.entries(), call.args["by"], since, spend.prices())


@op("prices", args={}, result={
    "date": Text("When the shipped table was made.", nullable=True),
    "source": Text("Where the shipped table came from.", nullable=True),
    "unit": Text(), "models": MapOf(PRICE, "Every model's price in force: the shipped table's, roost.json's on top."),
    "fromConfig": ListOf(Text(), "The models roost.json's `prices` sets."),
}, doc="The price table in force.")
def prices_op(call):
    return call.services.spend.prices().listing()


@op("windows", args={}, result={"windows": ListOf(WINDOW, "Each provider's, shortest window first.")},
    doc="The plan windows each provider's agents last wrote: percent used, when each resets, how old the reading is.")
def windows_op(call):
    return {"windows": call.services.windows.listing()}


@op("budget-allow", args={
    "id": JOB,
    "usd": Number("Let it spend this many USD more than it has; absent (and no `tokens`): lifted until the day "
                  "rolls over.", minimum=0, default=None),
    "tokens": Number("Let it spend this many tokens more (when `usd` is absent).", minimum=0, default=None),
}, result={
    "id": Text(),
    "allowed": Anything("{day, all: true} or {day, unit, more, from}: what it may spend today.", object=True),
    "wasHeld": Flag("It was parked at a budget."),
}, codes=FINDS, doc="A job parked at a budget let go on: what waited is typed or delivered now.")
def budget_allow(call):
    job = call.services.jobs.resolve(call.args["id"])
    for unit in ("usd", "tokens"):
        if call.args[unit] is not None:
            return call.services.budgets.allow(job, unit, call.args[unit])
    return call.services.budgets.allow(job)


@op("budgets", args={}, result={
    "budgets": Anything("roost.json's `budgets` as it stands ({} when none is set).", object=True),
    "over": Text("The fleet's budget spent today, in words, or null.", nullable=True),
    "held": ListOf(Shape(dict(BUDGET_HOLD.fields, id=Text(), name=Text()), name="HeldJob",
                         doc="A job parked at a budget, and why."),
                   "The jobs parked at a budget."),
}, doc="The budgets in force, what is spent against the fleet's, and the parked jobs.")
def budgets_op(call):
    services = call.services
    budgets = services.budgets
    held = [{"id": job.id, "name": job.name, **job.record["budgetHold"]} for job in services.jobs.all()
            if job.record.get("budgetHold")]
    return {"budgets": budgets.settings(), "over": (budgets.over() or (None, None))[1], "held": held}
