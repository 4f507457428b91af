"""The fleet as `roost web` keeps it: one subscribed connection per machine (the hub's
Links: this machine's alone, or `--host`'s, each row's id made `HOST:ID`), the pushes
taken into the hub's own Fleet (roost.hub.fleet: its groups and its ranking), and each
change handed to the pages (`on_change(message)`). Everything a daemon says is masked on
the way in (roost.notify.masking), so nothing unmasked is kept or sent.

Requests (a page's reply, keys, a task's approval) go on a second connection per
machine, one at a time; a machine that drops is tried again with the Link's backoff,
its rows gone meanwhile (as in the hub). Nothing here polls: each connection's greenlet
sleeps in its read until its daemon says something.
"""

import logging
import time

import gevent
import gevent.lock

from roost.client.connection import Lost, Unreachable
from roost.hub.fleet import Fleet
from roost.hub.links import job_id_of, tagged_id
from roost.web.guard import Refused
from roost.web.masked import masked

log = logging.getLogger(__name__)

FEED_AT_START = 100
PAGE_FEED = 50
# What a page draws of a row: the rest (cwd, pid, session file, context...) stays here,
# which halves what a snapshot of 500 rows costs to encode and to parse.
PAGE_FIELDS = ("id", "name", "state", "status", "waitingFor", "stateSince", "startedAt", "summary", "question",
               "choices", "error", "suggested", "pinned", "host", "role", "spend", "reaped", "queued")


def page_row(row):
    return {field: row[field] for field in PAGE_FIELDS if field in row}


class MachineDown(Exception):
    pass


class Mirror:
    def __init__(self, links, on_change):
        self.links = links
        self.several = links[0].tagged
        self.fleet = Fleet()
        self._on_change = on_change      # fn(message) for the pages
        self._actions = {}               # link name -> (Client, lock)
        self.version = 0
        self._layout_sent = None

    # -- the pushes -------------------------------------------------------------------

    def on_change(self, message):
        """Each change to the pages, counted: a page drawn from a snapshot of version V
        whose stream starts while the mirror is still at V needs no second snapshot. A
        page counts the rows, removed, feed and tasks messages it gets; the mirror counts
        those and more (a notification no page is sent), so a page that missed any
        never matches again and is sent a snapshot."""
        self.version += 1
        self._on_change(message)

    def start(self):
        for link in self.links:
            gevent.spawn(self._keep, link)

    def _keep(self, link):
        """One machine's subscription, for as long as the process lives."""
        while True:
            try:
                self._follow(link)
            except (OSError, Lost, Unreachable, MachineDown) as error:
                why = str(error) or type(error).__name__
            except Exception as error:        # logged, and the machine is tried again
                log.exception("following %s failed", link.name)
                why = str(error)
            link.lost(why)
            if self.several:
                self.fleet.drop_host(link.name)
            else:
                self.fleet.load([])
            self._changed(everything=True)
            gevent.sleep(max(0.0, link.retry_at - time.monotonic()))

    def _follow(self, link):
        link.client = None
        client = link.open()
        self._call(client, "subscribe", {})
        rows = [masked(link.row(row)) for row in self._call(client, "list", {}).get("jobs") or ()]
        early = [message for message in client.pending_events if message.get("event") != "rows"]
        client.pending_events = []
        events = self._call(client, "events", {"limit": FEED_AT_START}, quiet=True)
        events = [masked(link.event(entry)) for entry in (events or {}).get("events") or ()]
        tasks = None
        if link is self.links[0]:
            tasks = self._tasks(link, client)
        if self.several:
            self.fleet.load_host(link.name, rows, events, tasks)
        else:
            self.fleet.load(rows, events, tasks)
        link.up()
        for message in early:
            self.fleet.apply(masked(link.message(message)))
        self._changed(everything=True)
        while True:
            messages = client.pending_events + client.take_messages()
            client.pending_events = []
            for message in messages:
                if "event" in message:
                    self._take(link, message)
            if self.fleet.board_stale and link is self.links[0]:
                self.fleet.board_stale = False
                self.fleet.set_tasks(self._tasks(link, client) or [])
                self.on_change({"kind": "tasks", "tasks": self.fleet.tasks, "board": self.fleet.board_counts()})
                continue
            client.receive()

    def _take(self, link, message):
        kind = message.get("event")
        if kind == "board" and link is not self.links[0]:
            return                      # the board shown is the first machine's (as in the hub)
        message = masked(link.message(message))
        if kind == "notify":
            note = dict(message.get("note") or {})
            if self.several and note.get("id"):
                note["id"] = tagged_id(link.name, note["id"])
            self.on_change({"kind": "notify", "note": note})
            return
        layout = self.fleet.layout
        if not self.fleet.apply(message):
            return
        if kind == "rows":
            rows = [page_row(self.fleet.rows.get(row["id"]) or row) for row in message.get("rows") or ()]
            self.on_change({"kind": "rows", "rows": rows, **self._order_if(layout)})
        elif kind == "removed":
            self.on_change({"kind": "removed", "id": message.get("id"), **self._order_if(layout)})
        elif kind in ("feed", "concierge"):
            self.on_change({"kind": "feed", "entry": self.fleet.feed[-1]})

    def _order_if(self, layout):
        if self.fleet.layout == layout:
            return {}
        return {"groups": self.groups()}

    def _tasks(self, link, client):
        result = self._call(client, "task", {"action": "list"}, quiet=True)
        return link.tasks([masked(task) for task in (result or {}).get("tasks") or []])

    @staticmethod
    def _call(client, op, args, quiet=False):
        response = client.request(op, args)
        if response.get("ok"):
            return response.get("result") or {}
        if quiet:
            return None
        raise MachineDown(f"{op}: {response.get('code')}: {response.get('error')}")

    def _changed(self, everything=False):
        if everything:
            self.on_change({"kind": "snapshot"})

    # -- what the pages are given -----------------------------------------------------

    def groups(self):
        """[[group, [[id, reason], ...]], ...]: the hub's groups and ranking."""
        return [[group, [[row["id"], reason] for row, reason in rows]] for group, rows in self.fleet.groups()]

    def hosts(self):
        """Each machine's state with several; with one, only while it is down."""
        if not self.several:
            link = self.links[0]
            return None if link.why is None else [f"the daemon is unreachable ({link.why}); trying again"]
        return [link.state_text() for link in self.links]

    def snapshot(self):
        fleet = self.fleet
        concierge = page_row(fleet.concierge) if fleet.concierge is not None else None
        return {"kind": "snapshot", "version": self.version, "rows": [page_row(row) for row in fleet.rows.values()], "groups": self.groups(),
                "feed": list(fleet.feed)[-PAGE_FEED:], "tasks": fleet.tasks, "board": fleet.board_counts(),
                "concierge": concierge, "hosts": self.hosts()}

    # -- requests ---------------------------------------------------------------------

    def link_of(self, row_id):
        row = self.fleet.rows.get(row_id)
        if row is None and self.fleet.concierge is not None and self.fleet.concierge.get("id") == row_id:
            row = self.fleet.concierge
        if row is None:
            return self.links[0], row_id
        link = next((link for link in self.links if link.name == row.get("host")), self.links[0])
        return link, job_id_of(row)

    def request(self, link, op, args):
        """The result of one request on the machine's requests connection: the daemon's
        refusal as roost.client's Refused; a machine that cannot be reached is the page's
        503 (not a code of the protocol: no daemon answered)."""
        client, lock = self._actions.get(link.name) or (None, None)
        if lock is None:
            lock = gevent.lock.Semaphore()
            self._actions[link.name] = (None, lock)
        with lock:
            for attempt in (1, 2):
                client = self._actions[link.name][0]
                if client is None:
                    try:
                        client = link.opener()
                    except (Unreachable, OSError) as error:
                        raise Refused(503, f"{link.name} is unreachable: {error}") from error
                    self._actions[link.name] = (client, lock)
                try:
                    return client.call(op, args)
                except (Lost, OSError) as error:
                    self._actions[link.name] = (None, lock)
                    try:
                        client.close()
                    except OSError:
                        pass
                    if attempt == 2:
                        raise Refused(503, f"{link.name} is unreachable: {error}")
        raise Refused(503, f"{link.name} is unreachable")

