"""Standing orders (M46): what the person (or the concierge itself) tells the concierge
to keep doing, each on a clock of the schedules' vocabulary or none. At most 50, kept in
`$ROOST_HOME/orders.json` (version 1, through roost.store) before the op answers.

An order is {id, text, when, by, at, lastAt, nextAt, count}. One on a clock whose
`nextAt` has come is due: the digests (roost.concierge.digests) carry it in a "Due now"
section, and its `nextAt` moves on once that digest reached the concierge.
"""

import os

from roost import store
from roost.clock import now_ms
from roost.errors import FULL, UNSUPPORTED, RoostError, bad_request, not_found
from roost.jobs.launch import one_line
from roost.schedule import when as clock

FILE = "orders.json"
VERSION = 1
MAX_ORDERS = 50
TEXT_LIMIT = 500


class StandingOrders:
    def __init__(self, home, bus):
        self.path = os.path.join(home, FILE)
        self.bus = bus
        self.data = {}
        self.orders = []
        self.on_change = lambda: None      # the digests' timer looks again

    def load(self):
        self.data = store.read_json(self.path) or {}
        self.orders = [order for order in self.data.get("orders") or [] if isinstance(order, dict)]

    def _save(self):
        store.write_json(self.path, dict(self.data, version=VERSION, orders=self.orders,
                                         nextId=self.data.get("nextId", 1)))
        self.on_change()

    def listed(self):
        return [dict(order) for order in self.orders]

    def get(self, order_id):
        if isinstance(order_id, bool) or not isinstance(order_id, int):
            raise bad_request("id must be an order's number")
        order = next((order for order in self.orders if order["id"] == order_id), None)
        if order is None:
            raise not_found(f"no standing order #{order_id}")
        return order

    def add(self, text, when, by, by_id=None):
        text = one_line(text, TEXT_LIMIT) if isinstance(text, str) else ""
        if not text:
            raise bad_request("text is required: what the order says")
        rule = None
        if when is not None:
            if not isinstance(when, str):
                raise bad_request("when must be a string of the schedules' vocabulary")
            rule = clock.parse(when)
            when = clock.normal(when)
        if len(self.orders) >= MAX_ORDERS:
            raise RoostError(FULL, f"at most {MAX_ORDERS} standing orders: drop one first")
        now = now_ms()
        order_id = self.data.get("nextId", 1)
        self.data["nextId"] = order_id + 1
        order = {"id": order_id, "text": text, "when": when, "by": by, "at": now, "lastAt": None,
                 "nextAt": rule.next_after(now, now) if rule else None, "count": 0}
        if by_id:
            order["byId"] = by_id
        self.orders.append(order)
        self._save()
        self.bus.publish("concierge", f"order #{order_id} kept: {text}", who=by, why="order-kept", order=order_id)
        return order

    def remove(self, order_id, by):
        order = self.get(order_id)
        if by == "concierge" and order["by"] != "concierge":
            raise RoostError(UNSUPPORTED, f"order #{order_id} is the user's: the concierge drops only its own")
        self.orders.remove(order)
        self._save()
        self.bus.publish("concierge", f"order #{order_id} dropped: {order['text']}", who=by, why="order-dropped",
                         order=order_id)
        return order

    def applied(self, order_id, text, by_id):
        order = self.get(order_id)
        order["lastAt"] = now_ms()
        order["count"] += 1
        self._save()
        what = f": {one_line(text, TEXT_LIMIT)}" if isinstance(text, str) and text.strip() else ""
        self.bus.publish("concierge", f"#{order_id} {order['text']}{what}", who="concierge", who_id=by_id,
                         why="order", order=order_id)
        return order

    def due(self, now):
        return [order for order in self.orders if order.get("nextAt") is not None and order["nextAt"] <= now]

    def earliest(self):
        return min((order["nextAt"] for order in self.orders if order.get("nextAt") is not None), default=None)

    def moved_on(self, orders, now):
        """Their digest reached the concierge: each due order's clock moves past now."""
        for order in orders:
            if order.get("when"):
                order["nextAt"] = clock.parse(order["when"]).next_after(now, order["at"])
        if orders:
            self._save()
