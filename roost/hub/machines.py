"""The hub's side of its daemons: starting each machine's view (subscribe, then the
state), the requests, the pushes taken in, and, with machines named (roost.hub.links),
a machine that drops shown as down and tried again, and a row's request sent to its
machine with its job's own id. The Hub (roost.hub.app) holds one."""

import time

from roost.client.connection import Lost, Unreachable
from roost.hub.actions import DaemonLost
from roost.hub.links import job_id_of

FEED_AT_START = 100
CONNECT_S = 15.0       # a machine that does not answer its subscribe within this is down
TODAY_EVERY_S = 2.0    # today's spend is read again at most this often (issue 29)


class Machines:
    def __init__(self, links, fleet, on_push, say):
        """`links`: roost.hub.links.Link, one per machine (the first holds the board);
        `fleet`: the rows they fill (roost.hub.fleet); `on_push(message)`: a push taken in;
        `say(text)`: the hub's status line."""
        self.links = links
        self.several = links[0].tagged
        self.fleet = fleet
        self.on_push = on_push
        self.say = say
        self._today_at = {}     # machine -> when its spend today was last read (monotonic)

    @property
    def client(self):
        """The first machine's connection (the only one without --host)."""
        return self.links[0].client

    def start(self, wait=True):
        """Each machine's view. `wait=False` (the live screen, with machines named): each
        is only asked to subscribe, and its rows come in when it answers, so a machine
        slow to answer (ssh connecting, a host gone quiet) holds no one's screen."""
        for link in self.links:
            if wait or not self.several:
                self.guarded(self._start_link, link)
            else:
                self.guarded(self._begin, link)
        self._show_hosts()

    def _open(self, link):
        try:
            return link.open()
        except (OSError, Unreachable) as error:
            raise DaemonLost(str(error), link)

    def _start_link(self, link):
        self._open(link)
        self.call("subscribe", link=link)             # pushes from here on, then the state
        self._load(link)

    def _begin(self, link):
        """Subscribes without waiting for the answer (`_answered` takes it)."""
        client = self._open(link)
        try:
            request_id = client.send("subscribe", {})
        except OSError as error:
            raise DaemonLost(str(error), link)
        link.connecting = (request_id, time.monotonic() + CONNECT_S)

    def _answered(self, link):
        """A connecting machine's messages: once its subscribe is answered, its state."""
        client = link.client
        request_id, _ = link.connecting
        messages = client.pending_events + client.take_messages()
        answer = next((message for message in messages if message.get("id") == request_id
                       and "event" not in message), None)
        client.pending_events = [message for message in messages if "event" in message]
        if answer is None:
            return
        if not answer.get("ok"):
            raise DaemonLost(f"subscribe: {answer.get('code')}: {answer.get('error')}", link)
        link.connecting = None
        self._load(link)
        self._show_hosts()

    def _load(self, link):
        client = link.client
        rows = [link.row(row) for row in (self.call("list", {}, link=link) or {}).get("jobs") or ()]
        # Rows pushed before the list answered are older than it: keep only the rest.
        early = [message for message in client.pending_events if message.get("event") != "rows"]
        client.pending_events = []
        events = self.call("events", {"limit": FEED_AT_START}, quiet=True, link=link) or {}
        events = [link.event(entry) for entry in events.get("events") or ()]
        tasks = None
        if link is self.links[0]:
            tasks = link.tasks((self.call("task", {"action": "list"}, quiet=True, link=link) or {}).get("tasks"))
        self._read_today(link)
        if self.several:
            self.fleet.load_host(link.name, rows, events, tasks)
        else:
            self.fleet.load(rows, events, tasks)
        for message in early:
            self.fleet.apply(link.message(message))
        if link.why is not None:
            self.say(f"{link.name}: back")
        link.up()

    def _read_today(self, link):
        """issue 29: what the machine spent today (`usage`), read when it is loaded and
        when a pushed row's spend changed (at most every TODAY_EVERY_S): no polling."""
        now = time.monotonic()
        if now - self._today_at.get(link.name, -TODAY_EVERY_S) < TODAY_EVERY_S:
            self.fleet.spend_stale = True        # read again at a later push
            return
        self._today_at[link.name] = now
        result = self.call("usage", {"by": "host", "since": "today"}, quiet=True, link=link)
        if result is not None:
            self.fleet.set_today(link.name if self.several else None, result.get("total"))
        windows = self.call("windows", {}, quiet=True, link=link)
        if windows is not None:
            self.fleet.set_windows(link.name if self.several else None, windows.get("windows"))

    def link_of(self, row):
        return next((link for link in self.links if link.name == row.get("host")), self.links[0])

    def _route(self, args):
        """(the machine, the args with its jobs' own ids) of a request about rows."""
        rows = self.fleet.rows
        ids = args.get("ids") if isinstance(args.get("ids"), list) else None
        key = args.get("id") if ids is None else (ids[0] if ids else None)
        row = rows.get(key) if isinstance(key, str) else None
        if not self.several or row is None:
            return self.links[0], args
        link = self.link_of(row)
        if ids is None:
            return link, {**args, "id": job_id_of(row)}
        return link, {**args, "ids": [job_id_of(rows[other]) for other in ids
                                      if other in rows and rows[other].get("host") == link.name]}

    def guarded(self, action, link, *args):
        """With several machines, one that drops is shown as down, not the hub's end."""
        try:
            return action(link, *args)
        except DaemonLost as lost:
            if not self.several:
                raise
            self._lose(lost.link or link, str(lost))
            return None

    def _lose(self, link, why):
        link.lost(why)
        self.fleet.drop_host(link.name)
        self.say(f"{link.name}: {link.why}")
        self._show_hosts()

    def _show_hosts(self):
        if self.several:
            self.fleet.set_hosts([link.state_text() for link in self.links])

    def reconnect_due(self):
        now = time.monotonic()
        for link in self.links:
            if link.connecting is not None and now >= link.connecting[1]:
                self._lose(link, f"no answer in {CONNECT_S:.0f} s")
            elif link.due(now):
                self.guarded(self._begin, link)
        self._show_hosts()

    def call(self, op, args=None, quiet=False, link=None):
        """One request on the connection to a machine (the one of the row the args name);
        its result, or None (the refusal shown)."""
        args = args or {}
        if link is None:
            link, args = self._route(args)
        if link.client is None:
            if not quiet:
                self.say(f"{op}: {link.name} is down")
            return None
        try:
            response = link.client.request(op, args)
        except (Lost, OSError) as error:
            raise DaemonLost(str(error), link)
        if response.get("ok"):
            return response.get("result") or {}
        if not quiet:
            self.say(f"{op}: {response.get('code')}: {response.get('error')}")
        return None

    def take_pushes(self):
        for link in self.links:
            if link.client is not None:
                self.guarded(self._answered if link.connecting else self._take_pushes, link)

    def _take_pushes(self, link):
        client = link.client
        messages = client.pending_events + client.take_messages()
        client.pending_events = []
        for message in messages:
            # The board shown is the first machine's: another's counts would overwrite it.
            if "event" in message and (link is self.links[0] or message.get("event") != "board"):
                self.on_push(link.message(message))
        if self.fleet.spend_stale:
            self.fleet.spend_stale = False
            for each in self.links:
                if each.client is not None and not each.connecting:
                    self._read_today(each)
        if self.fleet.board_stale and link is self.links[0]:
            self.fleet.board_stale = False
            tasks = self.call("task", {"action": "list"}, quiet=True, link=link)
            if tasks is not None:
                self.fleet.set_tasks(link.tasks(tasks.get("tasks") or []))
            self._take_pushes(link)


    def tell_focus(self, looked_at):
        """Tells the machines which job a person looks at now (its row's id, or None): no
        desktop notification goes to it; each other machine hears of none."""
        row = self.fleet.rows.get(looked_at) if looked_at else None
        target = self.link_of(row) if row is not None else None
        for link in self.links:
            job_id = job_id_of(row) if link is target else None
            if link.client is not None and not link.connecting and link.focus != job_id:
                link.focus = job_id
                try:
                    link.client.send("notify", {"action": "focus", "id": job_id})   # its answer is not awaited
                except OSError as error:
                    self.guarded(_lost_by, link, error)


def receive(link):
    try:
        link.client.receive()
    except (Lost, OSError) as error:
        raise DaemonLost(str(error), link)


def _lost_by(link, error):
    raise DaemonLost(str(error), link)
