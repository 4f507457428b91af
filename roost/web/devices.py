"""The paired devices of `roost web`, kept in roost's home and shared by every `roost web`
(and the CLI's `roost web devices` / `revoke`): `$ROOST_HOME/web/devices.json` (0600, in
a 0700 directory), written atomically under an exclusive lock (`devices.lock`), so two
processes never lose each other's change.

Threat model: anything on this machine that can reach the listen port (a jailed agent
with network on, another user's process, a page in the person's own browser from another
site) can send requests; only a holder of a device's secret acts as the person. So:

- a pairing token is 32 random bytes, good once and for PAIRING_S; only its SHA-256 is
  kept, and it is taken out of the file under the lock, so two uses cannot both pair;
- a device's secret is 32 random bytes given once, in its cookie; the file keeps only its
  SHA-256, compared in constant time (hmac.compare_digest); a revoked device's entry is
  gone, so its cookie matches nothing;
- tokens and secrets are never logged, and never printed but for the pairing URL.

Standard library only: `roost web devices` runs on the CLI's light path.
"""

import contextlib
import fcntl
import hashlib
import hmac
import json
import os
import re
import secrets

from roost.clock import now_ms
from roost.unix.files import write_atomic

VERSION = 1
PAIRING_S = 600
NAME_LIMIT = 40
PUSH_LIMIT = 4096


def digest(secret):
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def same(one, other):
    return hmac.compare_digest(one.encode("ascii", "replace"), other.encode("ascii", "replace"))


def name_from_agent(user_agent):
    """A short name for a browser (`chrome-android`, `safari-iphone`), from its
    User-Agent; the number the book gives makes it unique."""
    agent = user_agent or ""
    browser = next((name for pattern, name in (("Edg/", "edge"), ("Firefox/", "firefox"), ("Chrome/", "chrome"),
                                                ("Chromium/", "chromium"), ("Safari/", "safari"))
                    if pattern in agent), "browser")
    system = next((name for pattern, name in (("iPhone", "iphone"), ("iPad", "ipad"), ("Android", "android"),
                                               ("Mac OS X", "mac"), ("Windows", "windows"), ("CrOS", "chromeos"),
                                               ("Linux", "linux"))
                   if pattern in agent), "")
    return "-".join(part for part in (browser, system) if part)


class DeviceBook:
    """The file, read afresh for each question (it is small), changed under the lock."""

    def __init__(self, home):
        self.dir = os.path.join(home, "web")
        self.path = os.path.join(self.dir, "devices.json")

    # -- the file ---------------------------------------------------------------------

    def _ensure_dir(self):
        os.makedirs(self.dir, mode=0o700, exist_ok=True)
        os.chmod(self.dir, 0o700)

    def read(self):
        try:
            with open(self.path, "rb") as handle:
                value = json.loads(handle.read() or b"{}")
        except FileNotFoundError:
            value = {}
        except ValueError:
            value = {}          # a damaged file pairs nothing: every device pairs again
        if not isinstance(value, dict):
            value = {}
        value.setdefault("version", VERSION)
        value["devices"] = [device for device in value.get("devices") or [] if isinstance(device, dict)]
        value["pairings"] = [pairing for pairing in value.get("pairings") or [] if isinstance(pairing, dict)]
        value.setdefault("next", 1)
        return value

    @contextlib.contextmanager
    def _changing(self):
        """The book, to change in place; written atomically once the block ends."""
        self._ensure_dir()
        fd = os.open(os.path.join(self.dir, "devices.lock"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            book = self.read()
            yield book
            write_atomic(self.path, json.dumps(book, indent=1, sort_keys=True).encode("utf-8"), 0o600)
        finally:
            os.close(fd)

    def ensure(self):
        """The file made when it is missing (a watcher of it then has a file to watch)."""
        if not os.path.exists(self.path):
            with self._changing():
                pass

    # -- pairing ----------------------------------------------------------------------

    def new_pairing(self):
        """A one-time pairing token (returned once, kept only as its digest)."""
        token = secrets.token_urlsafe(32)
        at = now_ms()
        with self._changing() as book:
            book["pairings"] = [pairing for pairing in book["pairings"] if pairing.get("expiresAt", 0) > at]
            book["pairings"].append({"tokenHash": digest(token), "expiresAt": at + PAIRING_S * 1000})
        return token

    def pair(self, token, user_agent, address):
        """Takes the token (once) and pairs a new device: (device id, secret, name), or
        None for a token that is unknown, used or expired."""
        if not isinstance(token, str) or not token or len(token) > 200:
            return None
        wanted = digest(token)
        at = now_ms()
        with self._changing() as book:
            found = None
            kept = []
            for pairing in book["pairings"]:
                if found is None and same(str(pairing.get("tokenHash", "")), wanted):
                    found = pairing
                elif pairing.get("expiresAt", 0) > at:
                    kept.append(pairing)
            book["pairings"] = kept
            if found is None or found.get("expiresAt", 0) <= at:
                return None
            number = int(book["next"])
            book["next"] = number + 1
            device_id = secrets.token_hex(12)
            secret = secrets.token_urlsafe(32)
            name = f"{name_from_agent(user_agent)}-{number}"[-NAME_LIMIT:]
            book["devices"].append({"id": device_id, "name": name, "number": number,
                                    "secretHash": digest(secret), "pairedAt": at, "lastSeen": at,
                                    "address": address, "push": None})
        return device_id, secret, name

    # -- devices ----------------------------------------------------------------------

    def find(self, device_id, secret):
        """The device whose cookie this is, or None (constant-time on the secret)."""
        if not device_id or not secret:
            return None
        wanted = digest(secret)
        for device in self.read()["devices"]:
            if device.get("id") == device_id and same(str(device.get("secretHash", "")), wanted):
                return device
        return None

    def seen(self, device_id, address):
        with self._changing() as book:
            for device in book["devices"]:
                if device.get("id") == device_id:
                    device["lastSeen"] = now_ms()
                    device["address"] = address

    def set_push(self, device_id, subscription):
        with self._changing() as book:
            for device in book["devices"]:
                if device.get("id") == device_id:
                    device["push"] = subscription

    def listed(self):
        """{devices: [{name, pairedAt, lastSeen, address}]}: what `roost web devices` shows."""
        return {"devices": [{"name": device.get("name"), "pairedAt": device.get("pairedAt"),
                             "lastSeen": device.get("lastSeen"), "address": device.get("address"),
                             "push": bool(device.get("push"))}
                            for device in self.read()["devices"]]}

    def ids(self):
        return {device.get("id") for device in self.read()["devices"]}

    def revoke(self, name):
        """Ends the device named `name` (or numbered): its name, or None when none is."""
        with self._changing() as book:
            kept, gone = [], None
            for device in book["devices"]:
                if gone is None and (device.get("name") == name or str(device.get("number")) == name):
                    gone = device.get("name")
                else:
                    kept.append(device)
            book["devices"] = kept
        return gone


def check_name(name):
    return bool(re.fullmatch(r"[A-Za-z0-9._-]{1,80}", name or ""))
