"""`roost web`'s process: the parts built once, in order, and served.

It is a client of the daemon like the hub (the person's process: started outside every
job, it is the Person on the daemon's socket), and a gevent process: the CLI's command
calls roost.daemon.patching's `patch()` before it imports this module. The HTTP server
is gevent's own pywsgi; the page's stream is Server-Sent Events over it (no second
library: EventSource reconnects by itself, and every answer is a POST anyway).

Parts: the device book (roost.web.devices, watched with inotify through libev's stat
watcher, so a revoke in another process closes that device's streams at once), the
guard (roost.web.guard), the mirror of the fleet (roost.web.mirror), the pages and their
screens, the pusher (roost.web.push). Nothing polls.
"""

import logging
import ssl
import sys

import gevent
import gevent.pywsgi

from roost.hub.fleet import group_of
from roost.web.app import WebApp
from roost.web.devices import DeviceBook
from roost.web.guard import Guard
from roost.web.mirror import Mirror
from roost.web.pages import Pages
from roost.web.push import Pusher
from roost.web.screens import Screens

log = logging.getLogger(__name__)

PUSH_KINDS = ("question", "dialog", "limit", "failure", "review")


class QuietLog:
    """pywsgi's access log, into roost's log, without the query string (a pairing URL
    holds a token, and a token is never logged)."""

    def write(self, line):
        line = line.rstrip("\n")
        start = line.find("?")
        if start >= 0:
            end = line.find(" ", start)
            line = line[:start] + "?..." + (line[end:] if end >= 0 else "")
        log.info("%s", line)


class WebServer:
    def __init__(self, home, links, listen_host, port, read_only=False, tls=None, public_url=None,
                 behind_proxy=False):
        self.home = home
        self.book = DeviceBook(home)
        self.pages = Pages()
        self.mirror = Mirror(links, self._changed)
        self.screens = Screens(self.mirror, self.pages)
        self.pusher = Pusher(home)
        self.tls = tls
        self.listen = (listen_host.strip("[]"), port)
        self.scheme = "https" if tls else "http"
        self.public_url = public_url
        self.behind_proxy = behind_proxy
        self.read_only = read_only
        self.server = None
        self.guard = None
        self._watcher = None

    def start(self):
        """Binds (port 0: a free one) and starts serving; the URL's base once bound."""
        options = {}
        if self.tls:
            context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            context.load_cert_chain(*self.tls)
            options["ssl_context"] = context
        self.server = gevent.pywsgi.WSGIServer(self.listen, None, log=QuietLog(), error_log=QuietLog(), **options)
        self.server.init_socket()
        port = self.server.socket.getsockname()[1]
        host = self.listen[0]
        self.guard = Guard(host, port, self.scheme, self.public_url, self.read_only, self.behind_proxy)
        self.server.application = WebApp(self.guard, self.book, self.mirror, self.pages, self.screens, self.pusher)
        self.mirror.start()
        self._watch_devices()
        self.server.start()
        shown = f"[{host}]" if ":" in host else host
        return self.public_url.rstrip("/") if self.public_url else f"{self.scheme}://{shown}:{port}"

    def serve_forever(self):
        self.server._stop_event.wait()

    def stop(self):
        for page in list(self.pages.pages.values()):
            self.pages.remove(page)
        if self.server is not None:
            self.server.stop(timeout=1)

    # -- revocations ------------------------------------------------------------------

    def _watch_devices(self):
        self.book.ensure()         # inotify watches a file that is there (libev polls a missing one)
        self._watcher = gevent.get_hub().loop.stat(self.book.path)
        self._watcher.start(self._devices_changed)

    def _devices_changed(self):
        try:
            self.pages.end_devices_not_in(self.book.ids())
        except Exception:
            log.exception("reading the device book failed")

    # -- what the daemons say, to the pages -------------------------------------------

    def _changed(self, message):
        kind = message["kind"]
        if kind == "notify":
            self._push(message.get("note") or {})
            return
        if kind == "snapshot":
            message = self.mirror.snapshot()
        self.pages.broadcast(message)

    def _push(self, note):
        """A notification, to each device with a push subscription that is not showing
        that job (attention), masked as it came."""
        if note.get("kind") not in PUSH_KINDS:
            return
        job_id = note.get("id")
        row = self.mirror.fleet.rows.get(job_id) if job_id else None
        needs_you = row is not None and group_of(row) == "needs"
        payload = {"title": note.get("title") or "roost", "body": note.get("body") or "", "id": job_id,
                   "kind": note.get("kind"), "reminder": bool(note.get("reminder"))}
        for device in self.book.read()["devices"]:
            subscription = device.get("push")
            if not subscription:
                continue
            if job_id and self.pages.showing(device["id"], job_id, needs_you):
                log.info("no push to %s for %s: it shows that job", device.get("name"), job_id)
                continue
            self.pusher.send(subscription, payload)


def print_url(url, token, stream=None):
    """The URL to open (the first line of output), then its QR code on a terminal."""
    stream = stream or sys.stdout
    link = f"{url}/?pair={token}"
    stream.write(link + "\n")
    if stream.isatty():
        try:
            import segno

            segno.make(link, error="l").terminal(out=stream, compact=True)
        except Exception as error:         # a QR code is a convenience: the URL stands
            log.info("no QR code: %s", error)
    stream.flush()
    return link
