"""The open pages of `roost web`: each page holds one event stream (SSE), and says what
it shows (`view`: the inbox or a job's screen, and whether it is visible). A change is
encoded once and put in every page's outbox; a page that lets its outbox grow past
OUTBOX_LIMIT is dropped (its EventSource reconnects and starts from a fresh snapshot).

Attention: a device is showing a job when one of its pages is visible and shows that
job's screen, or shows the inbox while the job needs the person (the inbox lists it). A
notification goes to a device only when it is not showing that job (roost.web.push).
"""

import itertools
import json

import gevent.queue

OUTBOX_LIMIT = 2000
KEEPALIVE_S = 25.0         # a comment line this often keeps proxies from closing the stream
CLOSE = object()

_numbers = itertools.count(1)


def encode(message):
    return ("data: " + json.dumps(message, ensure_ascii=False, separators=(",", ":")) + "\n\n").encode("utf-8")


class Page:
    def __init__(self, device_id, address):
        self.id = f"p{next(_numbers)}"
        self.device_id = device_id
        self.address = address
        self.outbox = gevent.queue.Queue()
        self.job = None             # the job whose screen it shows (None: the lists)
        self.visible = True
        self.closed = False

    def put(self, data):
        if self.closed:
            return
        if self.outbox.qsize() > OUTBOX_LIMIT:
            self.close()
            return
        self.outbox.put(data)

    def close(self):
        if not self.closed:
            self.closed = True
            self.outbox.put(CLOSE)

    def chunks(self):
        """What the stream's response yields: the outbox, and a keep-alive when quiet."""
        while True:
            try:
                data = self.outbox.get(timeout=KEEPALIVE_S)
            except gevent.queue.Empty:
                yield b": keep-alive\n\n"
                continue
            if data is CLOSE:
                return
            yield data


class Pages:
    def __init__(self):
        self.pages = {}

    def add(self, page):
        self.pages[page.id] = page
        return page

    def remove(self, page):
        self.pages.pop(page.id, None)
        page.close()

    def get(self, page_id, device_id):
        page = self.pages.get(page_id)
        return page if page is not None and page.device_id == device_id else None

    def broadcast(self, message):
        data = encode(message)
        for page in list(self.pages.values()):
            page.put(data)

    def send(self, pages, message):
        data = encode(message)
        for page in pages:
            page.put(data)

    def end_devices_not_in(self, device_ids):
        """Closes every stream of a device that is no longer paired (revoked)."""
        for page in list(self.pages.values()):
            if page.device_id not in device_ids:
                self.remove(page)

    def showing(self, device_id, job_id, needs_you):
        """Whether a visible page of the device shows the job (its screen, or the inbox
        that lists it while it needs the person)."""
        for page in self.pages.values():
            if page.device_id != device_id or not page.visible or page.closed:
                continue
            if page.job == job_id or (page.job is None and needs_you):
                return True
        return False

    def viewers(self, job_id):
        return [page for page in self.pages.values() if page.job == job_id and not page.closed]
