"""What the tests of `roost web` share: a real `roost web` process against a test daemon,
its printed pairing URL, and plain HTTP requests whose Host, Origin and cookie the test
sets itself (http.client: nothing in between decides for it)."""

import http.client
import json
import os
import signal
import socket
import subprocess
import threading
import time
from urllib.parse import urlsplit

from conftest import PYTHON, wait_for

DIALOG_TERM = {"settleMs": 200, "waiting": r"^prompt>$",
               "dialog": r"^(?P<question>Do you trust the files in this folder\?)$"}


class Web:
    """`python -m roost web ARGS` on the daemon's home; `url` is its first line."""

    def __init__(self, daemon, *args, env=None):
        self.daemon = daemon
        self.log = os.path.join(os.path.dirname(daemon.home), f"web-{time.monotonic_ns()}.log")
        self.process = subprocess.Popen(
            [PYTHON, "-m", "roost", "web", "--listen", "127.0.0.1:0", "--log", self.log, *args],
            env={**daemon.env, **(env or {})}, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            start_new_session=True)
        line = self.process.stdout.readline().decode().strip()
        if not line:
            raise AssertionError("roost web printed no URL: " + self.process.stderr.read().decode()[-2000:])
        self.first_line = line
        self.pair_url = line
        parts = urlsplit(line)
        self.base = f"{parts.scheme}://{parts.netloc}"
        self.host = parts.netloc
        self.port = parts.port

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        self.process.stdout.close()
        self.process.stderr.close()

    def log_text(self):
        try:
            with open(self.log, encoding="utf-8", errors="replace") as handle:
                return handle.read()
        except FileNotFoundError:
            return ""

    def new_pairing(self):
        said = self.daemon.cli("web", "pair")
        assert said.returncode == 0, said.stderr
        return said.stdout.decode().strip()

    # -- requests ---------------------------------------------------------------------

    def request(self, method, path, body=None, cookie=None, host=None, origin=None, csrf=None, headers=None):
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=15)
        sent = {"Host": host or self.host}
        if cookie:
            sent["Cookie"] = cookie
        if origin:
            sent["Origin"] = origin
        if csrf:
            sent["X-CSRF-Token"] = csrf
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            sent["Content-Type"] = "application/json"
        sent.update(headers or {})
        connection.request(method, path, body=data, headers=sent)
        response = connection.getresponse()
        payload = response.read()
        connection.close()
        return response.status, dict(response.getheaders()), payload

    def pair(self, url=None, agent="Mozilla/5.0 (X11; Linux x86_64) Chrome/150.0"):
        """Opens the pairing URL: (cookie, csrf token) of the new device."""
        path = (url or self.pair_url)[len(self.base):]
        status, headers, _ = self.request("GET", path, headers={"User-Agent": agent})
        assert status == 303, status
        cookie = headers["Set-Cookie"].split(";")[0]
        status, _, page = self.request("GET", "/", cookie=cookie)
        assert status == 200
        csrf = page.decode().split('name="csrf-token" content="')[1].split('"')[0]
        return cookie, csrf

    def post(self, path, body, cookie, csrf, origin=None):
        status, _, payload = self.request("POST", path, body, cookie=cookie, origin=origin or self.base, csrf=csrf)
        return status, json.loads(payload or b"{}")


class Stream:
    """A page's event stream read on a thread: `messages` as they come, `ended` once the
    server closed it."""

    def __init__(self, web, cookie, path="/api/stream"):
        self.connection = http.client.HTTPConnection("127.0.0.1", web.port, timeout=60)
        self.connection.request("GET", path, headers={"Host": web.host, "Cookie": cookie})
        self.response = self.connection.getresponse()
        self.status = self.response.status
        self.messages = []
        self.ended = threading.Event()
        if self.status == 200:
            threading.Thread(target=self._read, daemon=True).start()
        else:
            self.ended.set()

    def _read(self):
        try:
            for raw in self.response:
                line = raw.decode().rstrip("\n")
                if line.startswith("data: "):
                    self.messages.append(json.loads(line[len("data: "):]))
        except (OSError, ValueError, AttributeError, http.client.HTTPException):
            pass
        finally:
            self.ended.set()

    def first(self, kind, timeout=15, where=lambda message: True):
        return wait_for(lambda: next((message for message in self.messages
                                      if message.get("kind") == kind and where(message)), None),
                        timeout=timeout, what=f"a {kind} message on the stream")

    def close(self):
        # The reading thread holds the response's buffer: shut the socket under it first.
        sock = self.connection.sock
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self.ended.wait(10)
        self.connection.close()
