"""What the hub's keys do to the selected row: each a function of (hub, row) calling
the daemon's op on the hub's own connection, its outcome said on the status line."""

import curses

from roost.client import terminal, timeline_text
from roost.client.connection import Lost
from roost.client.terminal import printable
from roost.hub.links import job_id_of


TIMELINE_ENTRIES = 500       # the last entries a timeline view shows


class DaemonLost(Exception):
    """The hub's connection to a daemon closed (`link`: which machine's, when several)."""

    def __init__(self, why, link=None):
        super().__init__(why)
        self.link = link


def _name(row):
    return printable(row.get("name") or row["id"], 60)


def attach(hub, row):
    """Leaves curses for the shared attach, on the hub's connection to the row's machine;
    back on detach."""
    link = hub.machines.link_of(row)
    if link.client is None:
        hub.status = f"attach: {link.name} is down"
        return
    curses.endwin()
    try:
        _, why = terminal.attach(link.client, job_id_of(row), 0, 1,
                                 on_other=lambda message: hub.on_push(link.message(message)))
        if why == terminal.LOST:
            raise DaemonLost("the connection closed during attach", link)
        hub.status = f"detached from {_name(row)}" + (f": {printable(why)}" if why else "")
    except terminal.Refusal as refusal:
        hub.status = f"attach: {refusal.code}: {refusal.text}"
    except Lost as error:
        raise DaemonLost(str(error), link)
    finally:
        hub.stdscr.refresh()           # curses takes the terminal back (its modes, its screen)
        hub.focus_reporting()
        hub.resize()


def reply(hub, row):
    suggested = (row.get("suggested") or {}).get("text") or ""

    def send(text):
        if not text.strip():
            hub.status = "nothing sent (the reply was empty)"
            return
        result = hub.machines.call("reply", {"id": row["id"], "text": text, "requestId": hub.request_id()})
        if result is not None:
            how = "delivered" if result.get("delivered") else ("saved for its next start" if result.get("saved") else "queued")
            hub.status = f"reply to {_name(row)}: {how}"
    label = f"reply to {_name(row)}" + (" (the suggested answer; edit or Enter)" if suggested else "")
    hub.edit(label, suggested, send)


def peek(hub, row):
    height = hub.painter.size[0]
    result = hub.machines.call("peek", {"id": row["id"], "lines": max(1, height - 2)})
    if result is not None:
        lines = [printable(line, 1000) for line in (result.get("text") or "").split("\n")]
        hub.pager = {"title": f"peek: {_name(row)} ({row['id']})  p: again", "lines": lines, "top": 0,
                     "closer": "p", "follow": True}


def timeline(hub, row):
    """The job's flight recorder, newest last: why its row says what it says."""
    result = hub.machines.call("timeline", {"id": row["id"], "limit": TIMELINE_ENTRIES})
    if result is not None:
        text = "\n".join(timeline_text.line(entry) for entry in result.get("entries") or []) or "nothing recorded yet"
        lines = [printable(line, 1000) for line in text.split("\n")]
        hub.pager = {"title": f"timeline: {_name(row)} ({row['id']})  T: again", "lines": lines, "top": 0,
                     "closer": "T", "follow": True}


def stop(hub, row):
    def confirmed():
        if hub.machines.call("stop", {"id": row["id"]}) is not None:
            hub.status = f"stopped {_name(row)}"
    hub.ask(f"stop {_name(row)}?", confirmed)


def remove(hub, row):
    def confirmed():
        if hub.machines.call("rm", {"id": row["id"]}) is not None:
            hub.status = f"removed {_name(row)}"
    hub.ask(f"remove {_name(row)} and its directory?", confirmed)


def respawn(hub, row):
    result = hub.machines.call("respawn", {"id": row["id"]})
    if result is not None:
        outcome = (result.get("results") or [{}])[0]
        hub.status = (f"respawned {_name(row)}" if outcome.get("started")
                      else f"respawn {_name(row)}: {outcome.get('error') or 'not started'}")


def rename(hub, row):
    def send(text):
        result = hub.machines.call("rename", {"id": row["id"], "name": text}) if text.strip() else None
        if result is not None:
            hub.status = f"renamed to {printable(result.get('name'), 60)}"
    hub.edit(f"rename {_name(row)}", row.get("name") or "", send, limit=200)


def pin(hub, row):
    pinned = not row.get("pinned")
    if hub.machines.call("pin", {"id": row["id"], "pinned": pinned}) is not None:
        hub.status = f"{'pinned' if pinned else 'unpinned'} {_name(row)}"


def _reorder(hub, row, step):
    """AV-K13: the group as shown, with this row moved one place; the daemon keeps it."""
    group = next(entry[2] for entry in hub.entries if entry[0] == "row" and entry[1]["id"] == row["id"])
    if group == "needs":
        hub.status = "needs you is ranked by what answering unblocks: it keeps no order of yours"
        return
    ids = [entry[1]["id"] for entry in hub.entries if entry[0] == "row" and entry[2] == group]
    at = ids.index(row["id"])
    to = max(0, min(len(ids) - 1, at + step))
    ids.insert(to, ids.pop(at))
    hub.machines.call("reorder", {"ids": ids, "key": group})


ROW_KEYS = {
    "\n": attach, "\r": attach, curses.KEY_ENTER: attach,
    "r": reply, "p": peek, "T": timeline, "s": stop, "x": remove, "R": respawn, "n": rename, "P": pin,
    "J": lambda hub, row: _reorder(hub, row, 1), "K": lambda hub, row: _reorder(hub, row, -1),
}
