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
