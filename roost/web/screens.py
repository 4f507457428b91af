"""Jobs' live screens for the pages: one `screen` watch (roost.ops.screens) per job that
some page shows, on a connection of its own to the job's machine, shared by every page
that shows it. The daemon sends only the rows that changed; they are masked here and
passed on as they are. The last page to leave ends the watch (its connection closes)."""

import logging

import gevent

from roost.client.connection import Lost
from roost.web.masked import masked

log = logging.getLogger(__name__)


class Watch:
    def __init__(self, job_id, link, own_id):
        self.job_id = job_id            # as the pages name it (HOST:ID with machines)
        self.own_id = own_id            # the job's id on its machine
        self.link = link
        self.client = None
        self.state = None               # {rows, cols, lines, cursor, ended} as the pages were told
        self.greenlet = None


class Screens:
    def __init__(self, mirror, pages):
        self.mirror = mirror
        self.pages = pages
        self.watches = {}

    def show(self, page, job_id):
        """The page shows `job_id`'s screen (None: none): watched while any page does."""
        before = page.job
        page.job = job_id
        if before is not None and before != job_id:
            self._left(before)
        if job_id is None:
            return
        watch = self.watches.get(job_id)
        if watch is not None and watch.greenlet is not None and watch.greenlet.dead:
            self.watches.pop(job_id)          # it ended (the job did): a new look starts anew
            watch = None
        if watch is None:
            link, own_id = self.mirror.link_of(job_id)
            watch = self.watches[job_id] = Watch(job_id, link, own_id)
            watch.greenlet = gevent.spawn(self._follow, watch)
        elif watch.state is not None:
            self.pages.send([page], {"kind": "screen", "id": job_id, "full": True, **watch.state})

    def _left(self, job_id):
        if self.pages.viewers(job_id):
            return
        watch = self.watches.pop(job_id, None)
        if watch is not None:
            self._end(watch)

    def _end(self, watch):
        if watch.greenlet is not None and watch.greenlet is not gevent.getcurrent():
            watch.greenlet.kill(block=False)
        if watch.client is not None:
            try:
                watch.client.close()
            except OSError:
                pass

    def _follow(self, watch):
        try:
            watch.client = client = watch.link.opener()
            response = client.request("screen", {"id": watch.own_id})
            if not response.get("ok"):
                self._tell(watch, {"error": f"{response.get('code')}: {response.get('error')}", "ended": True})
                return
            first = masked(response.get("result") or {})
            watch.state = {key: first.get(key) for key in ("rows", "cols", "lines", "cursor", "ended")}
            self._tell(watch, dict(watch.state, full=True))
            while not first.get("ended"):
                messages = client.pending_events + client.take_messages()
                client.pending_events = []
                for message in messages:
                    if message.get("event") == "screen" and message.get("id") == watch.own_id:
                        if self._frame(watch, masked(message)):
                            return
                client.receive()
        except (Lost, OSError) as error:
            self._tell(watch, {"error": f"the connection to its machine closed ({error})", "ended": True})
        except Exception:
            log.exception("watching %s's screen failed", watch.job_id)

    def _frame(self, watch, message):
        """A frame of changed rows; True once the job's terminal is done."""
        state = watch.state
        if message.get("ended"):
            state["ended"] = True
            self._tell(watch, {"ended": True})
            return True
        rows, cols = message.get("rows") or state["rows"], message.get("cols") or state["cols"]
        lines = list(state["lines"] or [])
        if (rows, cols) != (state["rows"], state["cols"]):
            lines = lines[:rows] + [""] * max(0, rows - len(lines))
        for row, text in (message.get("lines") or {}).items():
            if row.isdigit() and int(row) < rows:
                while len(lines) <= int(row):
                    lines.append("")
                lines[int(row)] = text
        state.update(rows=rows, cols=cols, lines=lines, cursor=message.get("cursor") or state["cursor"])
        self._tell(watch, {"lines": message.get("lines") or {}, "rows": rows, "cols": cols,
                           "cursor": state["cursor"]})
        return False

    def _tell(self, watch, frame):
        viewers = self.pages.viewers(watch.job_id)
        if viewers:
            self.pages.send(viewers, {"kind": "screen", "id": watch.job_id, **frame})
