"""What every reader of a job's rows agrees on (the daemon's `list`, the CLI's table and
watch, the hub's groups): the order rows are listed in, and how a row's spend reads. A
leaf: the daemon and the clients both import it."""


def order_key(fields, group=None):
    """Pinned first (AV-K7), then the user's order (AV-K13), then oldest first. `fields`:
    a job's record (oldest by `createdAt`) or its row (by `startedAt`). `group`: the hub's
    group the rows are shown in; an order given in another group is stale there."""
    order = fields.get("order")
    if group is not None and fields.get("orderKey") != group:
        order = None
    return (not fields.get("pinned"), order is None, order or 0, fields.get("createdAt") or fields.get("startedAt") or 0)


def usd_text(usd, small_digits=4):
    """A list-price figure in USD: cents from a dollar up, `small_digits` decimals below."""
    return f"${usd:,.2f}" if usd >= 0.995 else f"${usd:.{small_digits}f}"


def spend_text(spend, small_digits=4, tokens_unit=" tok"):
    """A row's spend (issue 29): its list-price USD; its tokens (input and output) when a
    model it used has no price; `—` when roost cannot read it or it has spent nothing yet.
    The hub's narrow column asks for fewer digits and a shorter unit."""
    if not spend:
        return "—"
    if spend.get("usd") is not None:
        return usd_text(spend["usd"], small_digits)
    tokens = spend.get("tokens") or {}
    whole = (tokens.get("input") or 0) + (tokens.get("output") or 0)
    for size, unit in ((1_000_000, "M"), (1_000, "k")):
        if whole >= size:
            return f"{whole / size:.3g}{unit}{tokens_unit}"
    return f"{whole}{tokens_unit}"
