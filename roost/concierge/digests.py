"""The concierge's digests (M44, M46): what it is woken with. Only when something
changed (an event of the feed not of its own making) or a standing order came due,
never on a bare heartbeat; each digest holds only what happened since the last one, the
needs not said before, the sessions that changed (the rest of the fleet in one count
line), the standing orders and what is due now, in `<roost-digest>`, under a set size (roost.json `concierge.digestBytes`,
default 8 KiB) that says what it cut and how to ask for more.

A need (a session waiting for the user) is said once: again only after its row left
that wait and came back. One greenlet sends them: woken by the feed's listener, it waits
a moment for the burst to end, then sends; it sleeps until the earliest order is due.
"""

import logging
import time

import gevent
import gevent.event

from roost.errors import RoostError
from roost.jobs.launch import one_line
from roost.peers.directory import Peer

log = logging.getLogger(__name__)

DEFAULT_BYTES = 8192
MIN_BYTES = 1024
QUIET_S = 0.5              # a burst of events is one digest: wait this long for the next
MAX_PENDING = 1000
LINE = 240
CUT_RESERVE = 300         # room kept for the line that says what was cut


def _clock(ms):
    return time.strftime("%H:%M:%S", time.localtime(ms / 1000)) if ms else "--:--:--"


def _need_key(row):
    """One wait of one row: the need it is, said once."""
    return f"{row['id']}:{row.get('stateSince')}"


def needs_of(rows):
    return [row for row in rows if row.get("status") == "waiting" and row.get("waitingFor") in
            ("question", "dialog", "first-prompt") and row.get("role") != "concierge"]


def _row_line(row):
    wait = f" waits ({row['waitingFor']})" if row.get("status") == "waiting" else ""
    if row.get("state") == "blocked" and row.get("status") is None:
        wait = " (?: roost cannot tell whether it waits)"
    said = row.get("question") or row.get("summary") or ""
    return one_line(f"- {row['id']} {row.get('name')}: {row.get('state')}{wait} {said}".rstrip(), LINE)


def _need_line(row):
    choices = f" [{' / '.join(row['choices'][:6])}]" if row.get("choices") else ""
    return one_line(f"- {row['id']} {row.get('name')} waits since {_clock(row.get('stateSince'))} for "
                    f"{row.get('waitingFor')}: {row.get('question') or row.get('summary') or ''}{choices}", LINE)


def _event_line(event):
    name = f" {event['name']}:" if event.get("name") else ""
    return one_line(f"- {_clock(event.get('at'))} {event.get('kind')}{name} {event.get('text') or ''}", LINE)


def _order_line(order):
    clock = f" ({order['when']}, next {_clock(order['nextAt'])})" if order.get("when") else ""
    return one_line(f"- #{order['id']}{clock} by {order['by']}: {order['text']}", LINE)


def fleet_line(rows):
    """The whole fleet in one line: how many sessions stand how."""
    counts = {}
    for row in rows:
        how = "waiting" if row.get("status") == "waiting" else row.get("state") or "starting"
        counts[how] = counts.get(how, 0) + 1
    return f"{len(rows)} sessions: " + ", ".join(f"{count} {how}" for how, count in sorted(counts.items()))


def build(events, rows, orders, due, said, limit=DEFAULT_BYTES, why="change", changed=None, *, now):
    """(the digest's text, the need keys it says). `said`: the need keys said before;
    `changed`: the ids of the sessions the events are about (None: all of them), the
    only ones listed (the rest of the fleet is its one count line; `list` has them).
    Sections in the order they matter (due orders, new needs, the orders, what happened,
    the sessions that changed), each cut to what is left; what was cut is said, with how
    to ask for more."""
    needs = [row for row in needs_of(rows) if _need_key(row) not in said]
    head = f'<roost-digest why="{why}" at="{_clock(now)}">'
    tail = "</roost-digest>"
    budget = limit - len(head) - len(tail) - 2 - CUT_RESERVE
    parts, cuts = [], []

    def section(title, lines, more, newest_first=False):
        nonlocal budget
        if not lines:
            return
        taken, size = [], len(title.encode()) + 3
        for line in (reversed(lines) if newest_first else lines):
            width = len(line.encode()) + 1
            if size + width > budget:
                break
            taken.append(line)
            size += width
        if len(taken) < len(lines):
            cuts.append(f"{len(lines) - len(taken)} {more}")
        if not taken:
            return
        budget -= size
        parts.append(title + "\n" + "\n".join(reversed(taken) if newest_first else taken))

    section("Due now:", [_order_line(order) for order in due], "due orders (concierge-order list)")
    section("Needs the user (new):", [_need_line(row) for row in needs], "needs (list)")
    section("Standing orders:", [_order_line(order) for order in orders], "orders (concierge-order list)")
    section(f"What happened ({len(events)} events):", [_event_line(event) for event in events],
            "older events (events)", newest_first=True)
    listed = rows if changed is None else [row for row in rows if row["id"] in changed]
    section(f"The fleet, {fleet_line(rows)}; changed since the last digest:", [_row_line(row) for row in listed],
            "sessions (list)")
    if cuts:
        parts.append(one_line("Cut to fit: " + "; ".join(cuts) + ". Ask for more with the ops named.",
                              CUT_RESERVE - 2))
    # A blank line between sections: each is found by its title, and ends there.
    return "\n".join([head, "\n\n".join(parts), tail]), {_need_key(row) for row in needs}


class Digests:
    def __init__(self, registry, desk, orders, messenger, config, clock):
        self.registry = registry
        self.clock = clock         # roost.clock: when a standing order is due
        self.desk = desk
        self.orders = orders
        self.messenger = messenger
        self.config = config
        self.pending = []          # events since the last digest that reached the concierge
        self.said = set()          # need keys said, while their wait lasts
        self.sent = 0
        self._wake = gevent.event.Event()
        self._loop = None

    def start(self):
        self._loop = gevent.spawn(self._run)

    def stop(self):
        if self._loop is not None:
            self._loop.kill(block=False)

    def changed(self):
        self._wake.set()

    def event(self, event):
        """The feed's listener: an event not of the concierge's own making wakes it."""
        concierge = self.desk.job()
        own = concierge is not None and concierge.id in (event.get("id"), event.get("whoId"))
        if own or event.get("kind") == "concierge":
            return
        self.pending.append(event)
        del self.pending[:-MAX_PENDING]
        self._wake.set()

    def _limit(self):
        given = self.config.get("concierge")
        value = given.get("digestBytes") if isinstance(given, dict) else None
        if isinstance(value, bool) or not isinstance(value, int):
            return DEFAULT_BYTES
        return max(MIN_BYTES, value)

    def _run(self):
        while True:
            earliest = self.orders.earliest()
            timeout = None if earliest is None else max(0.0, (earliest - self.clock.now_ms()) / 1000.0)
            self.clock.wait(self._wake, timeout)
            self._wake.clear()
            self.clock.sleep(QUIET_S)      # the rest of the burst goes in the same digest
            try:
                self.send()
            except Exception:
                log.exception("a digest could not be sent; the next change tries again")

    def send(self):
        """A digest to the concierge when something changed or an order is due; whether
        one went."""
        job = self.desk.job()
        now = self.clock.now_ms()
        due = self.orders.due(now)
        if job is None or not job.run.active or (not self.pending and not due):
            return False
        rows = [other.row() for other in self.registry.all()
                if other.state is not None and other.record.get("role") != "concierge"]
        waiting = {_need_key(row) for row in needs_of(rows)}
        self.said &= waiting           # a wait that ended may be said again when it comes back
        changed = {event["id"] for event in self.pending if event.get("id")}
        why = "order" if due else "change"
        text, said = build(self.pending, rows, self.orders.listed(), due, self.said, self._limit(), why=why,
                           changed=changed, now=now)
        try:
            self.messenger.deliver(Peer.of_job(job), "digest", text, fields={"why": why})
        except RoostError as error:
            # Its agent takes no items (a protocol agent whose hello left agent-items out):
            # what happened waits, bounded, for one that does.
            log.info("no digest for the concierge %s: %s", job.id, error.text)
            return False
        self.pending = []
        self.said |= said
        self.sent += 1
        self.orders.moved_on(due, now)
        return True
