"""Who may ask `roost web` anything, checked before any route runs. Each refusal is plain:

- 421 for a Host that is not this server's (DNS rebinding: a foreign name resolving to
  127.0.0.1 reaches the port, but its requests name the foreign host);
- 403 for an Origin that is not this server's (another site's page posting here), a
  state-changing request without the device's CSRF token, or any action under
  `--read-only`;
- 401 without a paired device's cookie (a revoked one too);
- 429 for an address that sent too many wrong tokens or cookies (RATE_FAILURES in
  RATE_WINDOW_S).

The cookie is HttpOnly, SameSite=Strict, Path=/ (Secure on an HTTPS origin), and holds
the device's id and secret; the CSRF token is an HMAC of the secret, given to the page in
`<meta name="csrf-token">` and sent back in the `X-CSRF-Token` header.
"""

import collections
import hashlib
import hmac
import ipaddress
import time
from urllib.parse import urlsplit

COOKIE = "roost_device"
CSRF_HEADER = "HTTP_X_CSRF_TOKEN"
RATE_FAILURES = 10
RATE_WINDOW_S = 60.0
COOKIE_DAYS = 400          # the most a browser keeps a cookie


class Refused(Exception):
    def __init__(self, status, why):
        super().__init__(why)
        self.status = status
        self.why = why


def is_loopback(host):
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_listen(host, tls, behind_proxy):
    """None, or why this listen address is refused: anything but loopback needs TLS
    here or a TLS proxy in front (`--behind-proxy`)."""
    if is_loopback(host) or tls or behind_proxy:
        return None
    return (f"refusing to listen on {host}: it is not loopback, and the page would travel in clear; "
            "give --tls CERT KEY, or --behind-proxy URL when a TLS proxy (such as `tailscale serve`) is in front")


def host_port(netloc):
    """('host', 'port') of a Host header or a URL's netloc, lower-cased."""
    netloc = netloc.strip().lower()
    if netloc.startswith("["):
        end = netloc.find("]")
        host, rest = netloc[:end + 1], netloc[end + 1:]
        return host, rest[1:] if rest.startswith(":") else ""
    host, _, port = netloc.partition(":")
    return host, port


class Guard:
    def __init__(self, listen_host, port, scheme, public_url=None, read_only=False, behind_proxy=False):
        """`public_url`: where people open the page when it is not the listen address
        (`--behind-proxy URL`)."""
        self.read_only = read_only
        self.behind_proxy = behind_proxy
        self.secure = scheme == "https" or bool(public_url and public_url.startswith("https:"))
        names = {listen_host.lower()}
        if is_loopback(listen_host):
            names |= {"localhost", "127.0.0.1", "[::1]"}
        self.hosts = {f"{name}:{port}" for name in names}
        if str(port) == ("443" if scheme == "https" else "80"):
            self.hosts |= names
        self.origins = {f"{scheme}://{host}" for host in self.hosts}
        if public_url:
            parts = urlsplit(public_url)
            self.hosts.add(parts.netloc.lower())
            self.origins.add(f"{parts.scheme}://{parts.netloc}".lower())
        self._failures = collections.defaultdict(collections.deque)

    # -- every request ----------------------------------------------------------------

    def check_host(self, environ):
        host = (environ.get("HTTP_HOST") or "").lower()
        if host not in self.hosts:
            raise Refused(421, "this server does not answer for that host")

    def check_origin(self, environ, changing):
        """A foreign Origin is refused on every request; a state-changing one must say
        its Origin (every browser does on a POST)."""
        origin = environ.get("HTTP_ORIGIN")
        if origin is None:
            if changing:
                raise Refused(403, "a request that changes something must come from this page")
            return
        if origin.lower() not in self.origins:
            raise Refused(403, "a page of another origin may not ask this server anything")

    def address(self, environ):
        """Who asks: the peer, or behind a proxy the address it says it forwards for."""
        if self.behind_proxy:
            forwarded = (environ.get("HTTP_X_FORWARDED_FOR") or "").split(",")[0].strip()
            if forwarded:
                return forwarded[:64]
        return environ.get("REMOTE_ADDR") or "?"

    # -- wrong tokens -----------------------------------------------------------------

    def _counted(self, environ):
        """Who wrong tokens are counted against: the peer, and behind a proxy also the
        address it forwards for (a forwarded address alone could be made up by anyone
        who reaches the port directly)."""
        keys = {environ.get("REMOTE_ADDR") or "?"}
        if self.behind_proxy:
            keys.add("forwarded " + self.address(environ))
        return keys

    def check_rate(self, environ, now=None):
        now = time.monotonic() if now is None else now
        for key in self._counted(environ):
            failures = self._failures.get(key)
            if not failures:
                continue
            while failures and failures[0] < now - RATE_WINDOW_S:
                failures.popleft()
            if len(failures) >= RATE_FAILURES:
                raise Refused(429, "too many wrong tokens from this address: wait a minute")

    def failed(self, environ, now=None):
        for key in self._counted(environ):
            self._failures[key].append(time.monotonic() if now is None else now)
        while len(self._failures) > 10000:          # an address flood must not grow this without end
            self._failures.pop(next(iter(self._failures)))

    # -- the cookie and the CSRF token ------------------------------------------------

    def cookie_header(self, device_id, secret):
        secure = "; Secure" if self.secure else ""
        return ("Set-Cookie", f"{COOKIE}={device_id}.{secret}; HttpOnly; SameSite=Strict; Path=/; "
                              f"Max-Age={COOKIE_DAYS * 86400}{secure}")

    @staticmethod
    def cookie_of(environ):
        """(device id, secret) from the request's cookie, or (None, None)."""
        for part in (environ.get("HTTP_COOKIE") or "").split(";"):
            name, _, value = part.strip().partition("=")
            if name == COOKIE and "." in value:
                device_id, _, secret = value.partition(".")
                return device_id, secret
        return None, None

    @staticmethod
    def csrf_token(secret):
        return hmac.new(secret.encode("utf-8"), b"roost-web-csrf", hashlib.sha256).hexdigest()

    def check_csrf(self, environ, secret):
        given = environ.get(CSRF_HEADER) or ""
        if not hmac.compare_digest(given.encode("ascii", "replace"), self.csrf_token(secret).encode("ascii")):
            raise Refused(403, "the CSRF token is missing or wrong")

    def check_action(self):
        if self.read_only:
            raise Refused(403, "this page is read-only (roost web --read-only)")
