"""Watches (M43): `watch {id, when: idle | ended}` tells a session once, as a `notice`
item, when another session is next idle (its next stop: done, a question or a dialog,
failed, stopped, removed) or has ended (its run ended, or it was removed). Already so,
the notice comes at once (`fired: true`).

A job's watches are kept in `watches.json` (through roost.store), so they live across a
daemon's restart, kill -9 included: at its start every kept watch is looked at again, and
fires when what it waits for happened meanwhile. A watch expires after 12 hours; a
session keeps at most 20. A foreground peer's watches end with its connection.
"""

import logging
import os

from roost import store
from roost.clock import now_ms
from roost.errors import BAD_REQUEST, FULL, UNSUPPORTED, RoostError
from roost.jobs.news import describe
from roost.jobs.record import END_STATES
from roost.peers import envelope
from roost.peers.directory import Peer, relation

log = logging.getLogger(__name__)

FILE = "watches.json"
VERSION = 1
EXPIRE_MS = 12 * 60 * 60 * 1000
MAX_PER_SESSION = 20
WHEN = ("idle", "ended")


def is_idle(row):
    state = row.get("state")
    return state in END_STATES or (state == "blocked" and row.get("status") == "waiting")


class Watches:
    def __init__(self, home, registry, directory, messenger):
        self.path = os.path.join(home, FILE)
        self.registry = registry
        self.directory = directory
        self.messenger = messenger
        self.data = {}             # watches.json as read (fields this version does not know kept)
        self.watches = []          # {watcher, target, targetName, when, at}
        self._foreground = []      # the same, for foreground watchers (not kept on disk)

    def load(self):
        self.data = store.read_json(self.path) or {}
        self.watches = [watch for watch in self.data.get("watches") or [] if isinstance(watch, dict)]

    def recheck(self):
        """At the daemon's start: what each kept watch waits for may have happened."""
        for watch in list(self.watches):
            job = self.registry.get(watch["target"])
            if job is None:
                self._fire(watch, "was removed")
            elif self._met(watch, job.row(), ended=not job.running):
                self._fire(watch, describe(job.row()))

    # -- watch ------------------------------------------------------------------------

    def add(self, watcher, query, when):
        if when not in WHEN:
            raise RoostError(BAD_REQUEST, "when must be idle or ended")
        if not watcher.takes_items:
            raise RoostError(UNSUPPORTED, "this agent takes no notices (its hello did not say agent-items)")
        target = self.directory.find(watcher, query)
        self._expire()
        kept = self._foreground if watcher.job is None else self.watches
        if sum(1 for watch in kept if watch["watcher"] == watcher.id) >= MAX_PER_SESSION:
            raise RoostError(FULL, f"a session keeps at most {MAX_PER_SESSION} watches")
        watch = {"watcher": watcher.id, "target": target.id, "targetName": target.name, "when": when,
                 "at": now_ms()}
        result = {"id": target.id, "name": target.name, "when": when, "fired": False}
        if target.job is not None and self._met(watch, target.job.row(), ended=not target.job.running):
            self._notify(watch, watcher, describe(target.job.row()))
            return dict(result, fired=True)
        kept.append(watch)
        if kept is self.watches:
            self._save()
        else:
            watcher.session.on_close(lambda closed, watch=watch: self._drop_foreground(watch))
        return result

    def _drop_foreground(self, watch):
        if watch in self._foreground:
            self._foreground.remove(watch)

    @staticmethod
    def _met(watch, row, ended):
        if watch["when"] == "ended":
            return ended and row.get("state") in END_STATES
        return is_idle(row)

    # -- firing -----------------------------------------------------------------------

    def event(self, event):
        if event.get("kind") not in ("state", "remove") or not event.get("id"):
            return
        for watch in [w for w in self.watches + self._foreground if w["target"] == event["id"]]:
            if event["kind"] == "remove":
                self._fire(watch, "was removed")
            elif self._met(watch, event, ended=bool(event.get("ended"))):
                self._fire(watch, event.get("text") or "")

    def _fire(self, watch, news):
        for kept in (self.watches, self._foreground):
            if watch in kept:
                kept.remove(watch)
                if kept is self.watches:
                    self._save()
        if watch["at"] + EXPIRE_MS < now_ms():
            return
        watcher = self._watcher(watch)
        if watcher is not None:
            self._notify(watch, watcher, news)

    def _watcher(self, watch):
        job = self.registry.get(watch["watcher"])
        if job is not None:
            return Peer.of_job(job)
        return self.directory.foreground.get(watch["watcher"])

    def _notify(self, watch, watcher, news):
        target = self.registry.get(watch["target"])
        about = self._about(watch, target)
        text = envelope.notice(about, relation(watcher, about), watch["when"], news)
        try:
            self.messenger.deliver(watcher, "notice", text, about)
        except RoostError as error:
            log.info("a notice for %s was not delivered: %s", watch["watcher"], error.text)
            return
        self.messenger.bus.publish("notice", f"{about.name} is {watch['when']}: {news}", watcher.id, watcher.name,
                                   who=about.name, who_id=about.id)

    def _about(self, watch, target):
        if target is not None:
            return Peer.of_job(target)
        return Peer(watch["target"], watch.get("targetName") or watch["target"], "job", None, None, "")

    # -- keeping ----------------------------------------------------------------------

    def _expire(self):
        cutoff = now_ms() - EXPIRE_MS
        before = len(self.watches)
        self.watches = [watch for watch in self.watches if watch["at"] >= cutoff]
        self._foreground = [watch for watch in self._foreground if watch["at"] >= cutoff]
        if len(self.watches) != before:
            self._save()

    def _save(self):
        data = dict(self.data, version=VERSION, watches=self.watches)
        store.write_json(self.path, data)
