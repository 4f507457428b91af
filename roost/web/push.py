"""Web Push (RFC 8030, 8291, 8292) to paired devices, by attention: the daemon's own
notifications (the `notify` pushes every subscriber gets: one per wait, reminders as
set) go to each device with a push subscription that is not showing that job
(roost.web.pages). A page installed from an HTTPS origin (or localhost) subscribes
through its service worker with this server's VAPID key; the subscription is kept on the
device's entry in the device book, and goes when the device is revoked.

The message is encrypted with `http_ece` (aes128gcm) and signed with `py_vapid`: the two
libraries pywebpush is made of. pywebpush itself is not used: its 2.x pulls in aiohttp
and requests (eight more packages) for the one POST urllib3 makes here.

The VAPID key is made once and kept in `$ROOST_HOME/web/vapid.pem` (0600).
"""

import base64
import json
import logging
import os
import time
from urllib.parse import urlsplit

import gevent

from roost.unix.files import write_atomic
from roost.web.guard import is_loopback

log = logging.getLogger(__name__)

TTL_S = 3600
SEND_TIMEOUT_S = 10.0
SUBJECT = "mailto:roost@localhost"


def _b64decode(text):
    text = str(text)
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _b64encode(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def check_subscription(value):
    """The subscription as a page's PushManager gives it, or None when it is not one we
    send to: an https endpoint (plain http only to this machine: a local relay, a test)."""
    if not isinstance(value, dict):
        return None
    endpoint = value.get("endpoint")
    keys = value.get("keys") if isinstance(value.get("keys"), dict) else {}
    if not isinstance(endpoint, str) or len(endpoint) > 2000:
        return None
    parts = urlsplit(endpoint)
    if parts.scheme != "https" and not (parts.scheme == "http" and is_loopback(parts.hostname or "")):
        return None
    try:
        if len(_b64decode(keys.get("p256dh", ""))) != 65 or len(_b64decode(keys.get("auth", ""))) != 16:
            return None
    except (ValueError, TypeError):
        return None
    return {"endpoint": endpoint, "keys": {"p256dh": keys["p256dh"], "auth": keys["auth"]}}


class Pusher:
    def __init__(self, home):
        self.path = os.path.join(home, "web", "vapid.pem")
        self._vapid = None
        self._http = None

    def vapid(self):
        if self._vapid is None:
            from py_vapid import Vapid02

            if os.path.exists(self.path):
                self._vapid = Vapid02.from_file(self.path)
            else:
                vapid = Vapid02()
                vapid.generate_keys()
                write_atomic(self.path, vapid.private_pem(), 0o600)
                self._vapid = vapid
        return self._vapid

    def public_key(self):
        """The application server key a page subscribes with (base64url, uncompressed)."""
        from cryptography.hazmat.primitives import serialization

        key = self.vapid().public_key.public_bytes(serialization.Encoding.X962,
                                                    serialization.PublicFormat.UncompressedPoint)
        return _b64encode(key)

    def send(self, subscription, payload):
        """Spawned: encrypts and posts one message; logs how it went."""
        return gevent.spawn(self._send, subscription, payload)

    def _send(self, subscription, payload):
        import http_ece
        import urllib3
        from cryptography.hazmat.primitives.asymmetric import ec

        try:
            body = http_ece.encrypt(json.dumps(payload).encode("utf-8"), salt=os.urandom(16),
                                    private_key=ec.generate_private_key(ec.SECP256R1()),
                                    dh=_b64decode(subscription["keys"]["p256dh"]),
                                    auth_secret=_b64decode(subscription["keys"]["auth"]), version="aes128gcm")
            parts = urlsplit(subscription["endpoint"])
            claims = {"sub": SUBJECT, "aud": f"{parts.scheme}://{parts.netloc}", "exp": int(time.time()) + 12 * 3600}
            headers = dict(self.vapid().sign(claims))
            headers.update({"Content-Encoding": "aes128gcm", "TTL": str(TTL_S), "Urgency": "high",
                            "Content-Type": "application/octet-stream"})
            if self._http is None:
                self._http = urllib3.PoolManager(timeout=urllib3.Timeout(total=SEND_TIMEOUT_S), retries=False)
            response = self._http.request("POST", subscription["endpoint"], body=body, headers=headers)
            if response.status >= 300:
                log.warning("a web push was refused by its service: HTTP %s", response.status)
                return False
            return True
        except Exception as error:
            log.warning("a web push was not sent: %s", error)
            return False
