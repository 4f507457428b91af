"""What every reader of a job's rows agrees on (the daemon's `list`, the CLI's table and
watch, the hub's groups): the order rows are listed in. A leaf: the daemon and the
clients both import it."""


def order_key(fields, group=None):
    """Pinned first (AV-K7), then the user's order (AV-K13), then oldest first. `fields`:
    a job's record (oldest by `createdAt`) or its row (by `startedAt`). `group`: the hub's
    group the rows are shown in; an order given in another group is stale there."""
    order = fields.get("order")
    if group is not None and fields.get("orderKey") != group:
        order = None
    return (not fields.get("pinned"), order is None, order or 0, fields.get("createdAt") or fields.get("startedAt") or 0)
