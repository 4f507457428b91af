"""`roost web`'s routes, as one WSGI application (served by gevent's pywsgi):

    GET  /                 the page (401 unless paired; `/?pair=TOKEN` pairs, once)
    GET  /static/NAME      the page's script, style, icons; /sw.js its service worker
    GET  /api/stream       the page's event stream (SSE): hello, a snapshot, the changes
    POST /api/view         what a page shows {page, job, visible} (allowed read-only)
    POST /api/push         a page's push subscription (allowed read-only)
    POST /api/peek         {id}: the last lines of a job's screen (allowed read-only)
    POST /api/reply        {id, text, requestId, mode?}: `reply` (a choice's keys, a typed answer)
    POST /api/keys         {id, keys}: `keys`, the key bar's names only
    POST /api/later        {id, minutes}: Not now (`notify later`)
    POST /api/task         {action: approve|merge, id, hash?}: the board's review

Every request is checked first (roost.web.guard): its Host, its Origin, then the device's
cookie; a POST needs the CSRF token too, and an action is refused under --read-only.
Answers are JSON: {ok: true, result} or {ok: false, error, code}.
"""

import json
import logging
import os
import time
from urllib.parse import parse_qs

import gevent

from roost import blocking
from roost.client.connection import Refused as DaemonRefused
from roost.web import page as page_html
from roost.web.guard import Refused
from roost.web.masked import masked
from roost.web.pages import Page, encode

log = logging.getLogger(__name__)

STATIC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "static")
STATIC_TYPES = {".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8",
                ".json": "application/manifest+json", ".svg": "image/svg+xml", ".png": "image/png"}
MAX_BODY = 64 * 1024
KEY_BAR = ("Escape", "Tab", "BTab", "Up", "Down", "Left", "Right", "Enter", "C-c")
TASK_ACTIONS = ("approve", "merge")
SEEN_EVERY_S = 60.0
PEEK_LINES = 6
# The page's own files change only with roost: cached by the browser a day, their URLs
# carrying roost's version (the page names them so), so an upgrade is fetched anew.
STATIC_CACHE = ("Cache-Control", "public, max-age=86400, immutable")
_static_files = {}
SECURITY_HEADERS = [
    ("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                                "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"),
    ("X-Content-Type-Options", "nosniff"), ("Referrer-Policy", "no-referrer"), ("X-Frame-Options", "DENY"),
    ("Cache-Control", "no-store"),
]


class WebApp:
    def __init__(self, guard, book, mirror, pages, screens, pusher):
        self.guard = guard
        self.book = book
        self.mirror = mirror
        self.pages = pages
        self.screens = screens
        self.pusher = pusher
        self._seen = {}          # device id -> when its lastSeen was last written
        self._push_said = None   # the VAPID key pages subscribe with ("" once found missing)

    # -- WSGI -------------------------------------------------------------------------

    def __call__(self, environ, start_response):
        method = environ.get("REQUEST_METHOD", "GET")
        path = environ.get("PATH_INFO") or "/"
        try:
            self.guard.check_host(environ)
            self.guard.check_origin(environ, changing=method not in ("GET", "HEAD"))
            if method in ("GET", "HEAD") and (path.startswith("/static/") or path == "/sw.js"):
                return self._static(path, start_response)
            if path == "/" and method in ("GET", "HEAD"):
                return self._page(environ, start_response)
            device, secret = self._device(environ)
            if path == "/api/stream" and method == "GET":
                return self._stream(environ, start_response, device)
            if method != "POST" or not path.startswith("/api/"):
                raise Refused(404, "no such page")
            self.guard.check_csrf(environ, secret)
            body = _body(environ)
            handler = ROUTES.get(path[len("/api/"):])
            if handler is None:
                raise Refused(404, "no such action")
            if handler not in OPEN_ROUTES:
                self.guard.check_action()
            return _json(start_response, 200, {"ok": True, "result": handler(self, device, body)})
        except Refused as refused:
            return _json(start_response, refused.status, {"ok": False, "error": refused.why, "code": refused.status})
        except DaemonRefused as refused:
            return _json(start_response, 409, {"ok": False, "error": refused.text, "code": refused.code})

    # -- who asks ---------------------------------------------------------------------

    def _device(self, environ):
        """The paired device this request comes from; 401 (and a counted failure for a
        cookie that matches none) otherwise."""
        address = self.guard.address(environ)
        device_id, secret = self.guard.cookie_of(environ)
        if device_id is None:
            raise Refused(401, "this browser is not paired: open the URL `roost web` printed")
        self.guard.check_rate(environ)
        device = self.book.find(device_id, secret)
        if device is None:
            self.guard.failed(environ)
            raise Refused(401, "this device is not paired (or was revoked): pair it again")
        now = time.monotonic()
        if now - self._seen.get(device["id"], -SEEN_EVERY_S) >= SEEN_EVERY_S:
            self._seen[device["id"]] = now
            # Written off the loop (a durable write's fsync): no request waits for it.
            blocking.start(self.book.seen, device["id"], address)
        return device, secret

    def _page(self, environ, start_response):
        query = parse_qs(environ.get("QUERY_STRING") or "")
        token = (query.get("pair") or [None])[0]
        if token is not None:
            address = self.guard.address(environ)
            self.guard.check_rate(environ)
            paired = self.book.pair(token, environ.get("HTTP_USER_AGENT"), address)
            if paired is None:
                self.guard.failed(environ)
                raise Refused(401, "this pairing link was used already, or has expired: "
                                   "run `roost web pair` for a new one")
            device_id, secret, name = paired
            log.info("paired a new device: %s from %s", name, address)
            start_response("303 See Other", [("Location", "/"), self.guard.cookie_header(device_id, secret),
                                             *SECURITY_HEADERS])
            return [b""]
        device, secret = self._device(environ)
        # The fleet as it stands goes in the page itself: it draws before its stream opens.
        html = page_html.render(self.guard.csrf_token(secret), self.guard.read_only, device.get("name"),
                                self.mirror.snapshot())
        start_response("200 OK", [("Content-Type", "text/html; charset=utf-8"), *SECURITY_HEADERS])
        return [html]

    def _static(self, path, start_response):
        name = "sw.js" if path == "/sw.js" else path[len("/static/"):]
        if "/" in name or name.startswith(".") or not name:
            raise Refused(404, "no such file")
        data = _static_files.get(name)
        if data is None:
            try:
                with open(os.path.join(STATIC, name), "rb") as handle:
                    data = _static_files[name] = handle.read()
            except OSError:
                raise Refused(404, "no such file")
        kind = STATIC_TYPES.get(os.path.splitext(name)[1], "application/octet-stream")
        headers = [header for header in SECURITY_HEADERS if header[0] != "Cache-Control"]
        # The service worker is looked at afresh (a browser checks it for updates anyway).
        headers.append(("Cache-Control", "no-cache") if name == "sw.js" else STATIC_CACHE)
        start_response("200 OK", [("Content-Type", kind), *headers])
        return [data]

    # -- the stream -------------------------------------------------------------------

    def _stream(self, environ, start_response, device):
        since = (parse_qs(environ.get("QUERY_STRING") or "").get("since") or [None])[0]
        # A page drawn from the snapshot in its HTML, or reconnecting, at the version the
        # mirror is still at has it all: it is added to the pages in this same turn of the
        # loop, so no change can fall between the two.
        current = since == str(self.mirror.version)
        page = self.pages.add(Page(device["id"], self.guard.address(environ)))
        hello = {"kind": "hello", "page": page.id, "readOnly": self.guard.read_only, "device": device.get("name"),
                 "push": self._push_key()}
        start_response("200 OK", [("Content-Type", "text/event-stream; charset=utf-8"),
                                  ("Cache-Control", "no-store"), ("X-Accel-Buffering", "no")])

        def chunks():
            try:
                # retry: a dropped stream is tried again after a second (EventSource's own wait is 3)
                first = encode(hello) if current else encode(hello) + encode(self.mirror.snapshot())
                yield b"retry: 1000\n\n" + first
                yield from page.chunks()
            finally:
                self.screens.show(page, None)
                self.pages.remove(page)
        return chunks()

    def _push_key(self):
        if self._push_said is None:
            try:
                self._push_said = self.pusher.public_key()
            except Exception as error:       # no push here (a key that cannot be made or read): the page goes without
                log.warning("web push is off: %s", error)
                self._push_said = ""
        return self._push_said or None

    # -- what a page asks -------------------------------------------------------------

    def view(self, device, body):
        page = self.pages.get(str(body.get("page")), device["id"])
        if page is None:
            raise Refused(404, "no such page (its stream closed)")
        job = body.get("job")
        if job is not None and not isinstance(job, str):
            raise Refused(400, "job must be a job's id")
        page.visible = body.get("visible", True) is not False
        if job != page.job:
            self.screens.show(page, job)
        return {"page": page.id, "job": job}

    def peek(self, device, body):
        """The last lines of a job's screen (an inbox item without a question shows them)."""
        link, job_id = self._job(body)
        result = self.mirror.request(link, "peek", {"id": job_id, "lines": PEEK_LINES})
        return {"id": body["id"], "text": masked(result.get("text") or "")}

    def push(self, device, body):
        from roost.web.push import check_subscription

        subscription = check_subscription(body.get("subscription"))
        if subscription is None and body.get("subscription") is not None:
            raise Refused(400, "not a push subscription roost sends to")
        self.book.set_push(device["id"], subscription)
        return {"push": subscription is not None}

    def _job(self, body):
        job = body.get("id")
        if not isinstance(job, str) or not job:
            raise Refused(400, "id must name a job")
        return self.mirror.link_of(job)

    def reply(self, device, body):
        link, job_id = self._job(body)
        text, request_id = body.get("text"), body.get("requestId")
        if not isinstance(text, str) or not text.strip():
            raise Refused(400, "the reply is empty")
        args = {"id": job_id, "text": text}
        if request_id is not None:
            if not isinstance(request_id, str):
                raise Refused(400, "requestId must be a string")
            # The reply row's requestId field says what it takes (1-64 of A-Z a-z 0-9 _ . : -):
            # one it refuses comes back as the daemon's bad_request, never sent without it.
            args["requestId"] = "web-" + request_id
        if body.get("mode") in ("steer", "followUp"):
            args["mode"] = body["mode"]
        return self.mirror.request(link, "reply", args)

    def keys(self, device, body):
        link, job_id = self._job(body)
        names = body.get("keys")
        if not isinstance(names, list) or not names or len(names) > 10 or any(name not in KEY_BAR for name in names):
            raise Refused(400, "keys must be the key bar's: " + ", ".join(KEY_BAR))
        return self.mirror.request(link, "keys", {"id": job_id, "keys": names})

    def later(self, device, body):
        link, job_id = self._job(body)
        minutes = body.get("minutes")
        if isinstance(minutes, bool) or not isinstance(minutes, int):
            raise Refused(400, "minutes must be a whole number")
        return self.mirror.request(link, "notify", {"action": "later", "id": job_id, "minutes": minutes})

    def task(self, device, body):
        action, task_id = body.get("action"), body.get("id")
        if action not in TASK_ACTIONS or isinstance(task_id, bool) or not isinstance(task_id, int):
            raise Refused(400, "the board's actions here: approve (dry, or with the hash shown) and merge")
        args = {"action": action, "id": task_id}
        if action == "approve":
            if body.get("dry"):
                args["dry"] = True
            elif isinstance(body.get("hash"), str) and body["hash"]:
                args["hash"] = body["hash"]
            else:
                raise Refused(400, "approve with the hash you were shown (look first: dry)")
        return self.mirror.request(self.mirror.links[0], "task", args)


ROUTES = {"view": WebApp.view, "peek": WebApp.peek, "push": WebApp.push, "reply": WebApp.reply, "keys": WebApp.keys,
          "later": WebApp.later, "task": WebApp.task}
# What a read-only page may still do: say what it shows, read a screen, be told of what needs you.
OPEN_ROUTES = (WebApp.view, WebApp.peek, WebApp.push)


def _body(environ):
    try:
        length = int(environ.get("CONTENT_LENGTH") or 0)
    except ValueError:
        raise Refused(400, "a bad Content-Length")
    if length > MAX_BODY:
        raise Refused(413, "the request is too large")
    raw = environ["wsgi.input"].read(length) if length else b""
    try:
        body = json.loads(raw or b"{}")
    except ValueError:
        raise Refused(400, "the body must be JSON")
    if not isinstance(body, dict):
        raise Refused(400, "the body must be a JSON object")
    return body


def _json(start_response, status, value):
    reason = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found",
              409: "Conflict", 413: "Payload Too Large", 421: "Misdirected Request",
              429: "Too Many Requests", 503: "Service Unavailable"}.get(status, "Error")
    data = json.dumps(value, ensure_ascii=False).encode("utf-8")
    start_response(f"{status} {reason}", [("Content-Type", "application/json; charset=utf-8"), *SECURITY_HEADERS])
    return [data]
