"""`roost web`, safe by default (issue 30 item 2), over plain HTTP against a real daemon
and a real `roost web` process: pairing once, cookies, Host and Origin, CSRF, the rate
limit on wrong tokens, read-only, masking, revocation, the listen rule, TLS. The page in
a real browser is tests/test_web_browser.py."""

import json
import os
import ssl
import stat
import subprocess
import http.client
import time

import pytest

from conftest import PYTHON, wait_for
from jobkit import dispatch, wait_row
from webkit import Stream, Web

SECRET = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"


@pytest.fixture
def web(daemon):
    started = Web(daemon)
    yield started
    started.stop()
    assert "Traceback" not in started.log_text(), started.log_text()[-3000:]


def test_the_first_line_is_the_url_and_opening_it_pairs_once(web):
    assert web.first_line.startswith("http://127.0.0.1:") and "/?pair=" in web.first_line
    path = web.pair_url[len(web.base):]
    status, headers, _ = web.request("GET", path, headers={"User-Agent": "Mozilla/5.0 (iPhone) Safari/604.1"})
    assert status == 303 and headers["Location"] == "/"
    cookie = headers["Set-Cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/" in cookie
    # A second use of the token pairs nothing.
    status, headers, _ = web.request("GET", path)
    assert status == 401 and "Set-Cookie" not in headers
    status, _, page = web.request("GET", "/", cookie=cookie.split(";")[0])
    assert status == 200 and b'<meta name="csrf-token" content="' in page


def test_without_a_paired_cookie_everything_is_refused(web):
    for path in ("/", "/api/stream"):
        assert web.request("GET", path)[0] == 401
        assert web.request("GET", path, cookie="roost_device=abc.def")[0] == 401
    status, _ = web.post("/api/keys", {"id": "x", "keys": ["Enter"]}, cookie=None, csrf="x")
    assert status == 401


def test_an_expired_pairing_token_is_refused(web, daemon):
    book = os.path.join(daemon.home, "web", "devices.json")
    with open(book) as handle:
        value = json.load(handle)
    for pairing in value["pairings"]:
        pairing["expiresAt"] -= 11 * 60 * 1000          # ten minutes and one have passed
    with open(book, "w") as handle:
        json.dump(value, handle)
    assert web.request("GET", web.pair_url[len(web.base):])[0] == 401


def test_the_devices_are_kept_private_and_no_token_is_logged(web, daemon):
    cookie, csrf = web.pair()
    directory = os.path.join(daemon.home, "web")
    assert stat.S_IMODE(os.stat(directory).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(os.path.join(directory, "devices.json")).st_mode) == 0o600
    secret = cookie.split(".", 1)[1]
    token = web.pair_url.split("pair=")[1]
    with open(os.path.join(directory, "devices.json")) as handle:
        kept = handle.read()
    assert secret not in kept and token not in kept
    web.request("GET", "/api/stream-nothing", cookie=cookie)
    assert token not in web.log_text() and secret not in web.log_text() and csrf not in web.log_text()


def test_a_foreign_host_or_origin_is_refused(web):
    cookie, csrf = web.pair()
    assert web.request("GET", "/", cookie=cookie, host=f"evil.example:{web.port}")[0] == 421
    assert web.request("GET", "/", cookie=cookie, origin="http://evil.example")[0] == 403
    status, _ = web.post("/api/view", {"page": "p1"}, cookie, csrf, origin="http://evil.example")
    assert status == 403
    status, _, _ = web.request("POST", "/api/view", {"page": "p1"}, cookie=cookie, csrf=csrf)   # no Origin
    assert status == 403


def test_a_change_needs_the_csrf_token(web, daemon):
    job_id = dispatch(daemon, ["sh", "-c", "read line; echo got $line; sleep 30"])
    wait_row(daemon, job_id, lambda row: row["waitingFor"], what="the read")
    cookie, csrf = web.pair()
    assert web.post("/api/keys", {"id": job_id, "keys": ["Enter"]}, cookie, csrf="0" * 64)[0] == 403
    assert web.post("/api/keys", {"id": job_id, "keys": ["Enter"]}, cookie, csrf=None)[0] == 403
    # roost's typing rules hold: a control character is refused, nothing typed.
    status, answer = web.post("/api/reply", {"id": job_id, "text": "rm -rf /\x1b[A\r"}, cookie, csrf)
    assert status == 409 and answer["code"] == "bad_request"
    status, answer = web.post("/api/reply", {"id": job_id, "text": "yes", "requestId": "r1"}, cookie, csrf)
    assert status == 200 and answer["ok"]
    wait_for(lambda: "got yes" in daemon.call("peek", id=job_id)["text"], what="the reply typed")


def test_a_request_id_the_reply_row_refuses_is_refused_never_dropped(web, daemon):
    job_id = dispatch(daemon, ["sh", "-c", "read line; echo got $line; sleep 30"])
    wait_row(daemon, job_id, lambda row: row["waitingFor"], what="the read")
    cookie, csrf = web.pair()
    # Too long for the reply row's requestId: a reply sent without it could be typed twice.
    status, answer = web.post("/api/reply", {"id": job_id, "text": "yes", "requestId": "r" * 120}, cookie, csrf)
    assert status == 409 and answer["code"] == "bad_request" and "requestId" in answer["error"]
    status, answer = web.post("/api/reply", {"id": job_id, "text": "yes", "requestId": 7}, cookie, csrf)
    assert status == 400 and "requestId" in answer["error"]
    assert "got yes" not in daemon.call("peek", id=job_id)["text"]


def test_a_daemon_that_cannot_be_reached_is_the_pages_503(daemon):
    # Told the socket (as the daemon's own `roost web` is), it starts no daemon of its own.
    web = Web(daemon, env={"ROOST_SOCKET": daemon.socket})
    try:
        cookie, csrf = web.pair()
        daemon.stop()
        status, answer = web.post("/api/keys", {"id": "abc", "keys": ["Enter"]}, cookie, csrf)
        assert status == 503 and "unreachable" in answer["error"], answer
    finally:
        web.stop()
    assert "Traceback" not in web.log_text(), web.log_text()[-3000:]


def test_not_now_puts_a_wait_off(web, daemon):
    job_id = dispatch(daemon, ["sh", "-c", "echo 'go on?'; read line"])
    wait_row(daemon, job_id, lambda row: row["waitingFor"], what="the question")
    cookie, csrf = web.pair()
    before = int(time.time() * 1000)
    status, answer = web.post("/api/later", {"id": job_id, "minutes": 60}, cookie, csrf)
    assert status == 200 and answer["result"]["until"] >= before + 60 * 60 * 1000


def test_only_the_key_bars_keys_are_sent(web, daemon):
    job_id = dispatch(daemon, ["sh", "-c", "sleep 30"])
    cookie, csrf = web.pair()
    status, answer = web.post("/api/keys", {"id": job_id, "keys": ["x"]}, cookie, csrf)
    assert status == 400 and "key bar" in answer["error"]


def test_wrong_tokens_are_rate_limited_per_address(web):
    for number in range(10):
        assert web.request("GET", f"/?pair=wrong{number}")[0] == 401
    # The right token too, from this address, until a minute has passed.
    assert web.request("GET", web.pair_url[len(web.base):])[0] == 429
    assert web.request("GET", "/", cookie="roost_device=abc.def")[0] == 429


def test_read_only_refuses_every_action_but_serves_the_page(daemon):
    web = Web(daemon, "--read-only")
    try:
        job_id = dispatch(daemon, ["sh", "-c", "read line; echo got $line; sleep 30"])
        wait_row(daemon, job_id, lambda row: row["waitingFor"], what="the read")
        cookie, csrf = web.pair()
        status, _, page = web.request("GET", "/", cookie=cookie)
        assert status == 200 and b'content="true"' in page
        for path, body in (("/api/reply", {"id": job_id, "text": "yes"}), ("/api/keys", {"id": job_id, "keys": ["Enter"]}),
                           ("/api/later", {"id": job_id, "minutes": 5}), ("/api/task", {"action": "merge", "id": 1})):
            status, answer = web.post(path, body, cookie, csrf)
            assert status == 403 and "read-only" in answer["error"], path
        stream = Stream(web, cookie)
        page_id = stream.first("hello")["page"]
        assert web.post("/api/view", {"page": page_id, "job": None}, cookie, csrf)[0] == 200
        status, answer = web.post("/api/peek", {"id": job_id}, cookie, csrf)      # reading is no action
        assert status == 200 and "text" in answer["result"]
        stream.close()
        assert "got yes" not in daemon.call("peek", id=job_id)["text"]
    finally:
        web.stop()


def test_what_leaves_is_masked(web, daemon):
    job_id = dispatch(daemon, ["sh", "-c", f"echo 'the key is {SECRET} ok?'; read line"], name=f"job token={SECRET}")
    wait_row(daemon, job_id, lambda row: row["waitingFor"], what="the question")
    cookie, csrf = web.pair()
    stream = Stream(web, cookie)
    snapshot = stream.first("snapshot", where=lambda message: any(row["id"] == job_id for row in message["rows"]))
    stream.close()
    text = json.dumps(snapshot)
    assert SECRET not in text and "***" in text
    status, answer = web.post("/api/peek", {"id": job_id}, cookie, csrf)          # a screen's last lines too
    assert status == 200 and "the key is *** ok?" in answer["result"]["text"] and SECRET not in json.dumps(answer)


def test_a_revoked_device_is_cut_off_at_once(web, daemon):
    cookie, csrf = web.pair()
    other_cookie, _ = web.pair(web.new_pairing(), agent="Mozilla/5.0 (Linux; Android 15) Chrome/150.0")
    listed = json.loads(daemon.cli("web", "devices", "--json").stdout)
    names = [device["name"] for device in listed["devices"]]
    assert names == ["chrome-linux-1", "chrome-android-2"]
    assert set(listed["devices"][0]) >= {"name", "pairedAt", "lastSeen", "address"}
    stream, other = Stream(web, cookie), Stream(web, other_cookie)
    stream.first("snapshot")
    other.first("snapshot")
    said = daemon.cli("web", "revoke", "chrome-linux-1")
    assert said.returncode == 0, said.stderr
    assert stream.ended.wait(10), "the revoked device's stream is still open"
    assert not other.ended.is_set()
    assert Stream(web, cookie).status == 401          # its reconnect too
    assert web.request("GET", "/", cookie=cookie)[0] == 401
    assert web.request("GET", "/", cookie=other_cookie)[0] == 200
    other.close()
    assert daemon.cli("web", "revoke", "nobody").returncode == 1


@pytest.mark.parametrize("listen", ["0.0.0.0:0", "192.0.2.7:7717", "[::]:0"])
def test_a_listen_address_other_than_loopback_needs_tls(daemon, listen):
    said = subprocess.run([PYTHON, "-m", "roost", "web", "--listen", listen], env=daemon.env,
                          capture_output=True, timeout=30)
    assert said.returncode == 2 and said.stdout == b""
    assert b"not loopback" in said.stderr and b"--tls" in said.stderr and b"--behind-proxy" in said.stderr


def test_tls_serves_https_with_a_secure_cookie(daemon, tmp_path):
    certificate, key = _self_signed(tmp_path)
    web = Web(daemon, "--tls", certificate, key)
    try:
        assert web.first_line.startswith("https://127.0.0.1:")
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        connection = http.client.HTTPSConnection("127.0.0.1", web.port, context=context, timeout=15)
        connection.request("GET", web.pair_url[len(web.base):], headers={"Host": web.host})
        response = connection.getresponse()
        assert response.status == 303 and "Secure" in response.getheader("Set-Cookie")
        connection.close()
    finally:
        web.stop()


def _self_signed(tmp_path):
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.timezone.utc)
    certificate = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
                   .serial_number(1).not_valid_before(now).not_valid_after(now + datetime.timedelta(days=1))
                   .sign(key, hashes.SHA256()))
    cert_path, key_path = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return str(cert_path), str(key_path)


def _web_pids(home):
    pids = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                argv = handle.read().split(b"\0")
            with open(f"/proc/{pid}/environ", "rb") as handle:
                environ = handle.read()
        except OSError:
            continue
        if b"web" in argv and f"ROOST_HOME={home}\0".encode() in environ:
            pids.append(int(pid))
    return pids


def test_roost_json_web_keeps_one_running(home):
    from conftest import DaemonProcess
    from jobkit import write_config

    os.makedirs(home, mode=0o700)
    write_config(home, {"web": {"listen": "127.0.0.1:0"}})
    daemon = DaemonProcess(home).start()
    try:
        url_file = os.path.join(home, "web", "url")
        wait_for(lambda: os.path.exists(url_file) and len(_web_pids(home)) == 1, timeout=20,
                 what="the kept roost web")
        first = _web_pids(home)[0]
        with open(url_file) as handle:
            first_url = handle.read()
        os.kill(first, 9)
        wait_for(lambda: _web_pids(home) and _web_pids(home) != [first], timeout=20, what="it started again")

        def second_url():
            with open(url_file) as handle:
                return handle.read() != first_url
        wait_for(second_url, timeout=20, what="the new one's URL (port 0: a new port)")
        said = daemon.cli("web", "pair")
        assert said.returncode == 0
        url = said.stdout.decode().strip()
        wait_for(lambda: _answers(url), timeout=20, what="the new one to serve its pairing URL")
    finally:
        daemon.stop()
    wait_for(lambda: not _web_pids(home), timeout=10, what="the kept web to end with the daemon")


def _answers(url):
    import urllib.request
    from urllib.error import HTTPError, URLError

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args):
            return None

    try:
        urllib.request.build_opener(NoRedirect).open(url, timeout=5)
    except HTTPError as error:
        return error.code == 303
    except URLError:
        return False
    return False


class PushService:
    """A push service on loopback: what each subscription's endpoint was sent."""

    def __init__(self):
        import http.server
        import threading

        received = self.received = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                received.append((self.path, dict(self.headers), body))
                self.send_response(201)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def _subscription(endpoint):
    import base64

    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    key = ec.generate_private_key(ec.SECP256R1())
    auth = os.urandom(16)
    public = key.public_key().public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
    encode = lambda data: base64.urlsafe_b64encode(data).rstrip(b"=").decode()      # noqa: E731
    return {"endpoint": endpoint, "keys": {"p256dh": encode(public), "auth": encode(auth)}}, key, auth


def test_push_goes_by_attention_encrypted_and_masked(web, daemon):
    import http_ece

    service = PushService()
    try:
        showing_cookie, showing_csrf = web.pair()
        away_cookie, away_csrf = web.pair(web.new_pairing())
        showing_sub, _, _ = _subscription(service.base + "/showing")
        away_sub, away_key, away_auth = _subscription(service.base + "/away")
        assert web.post("/api/push", {"subscription": showing_sub}, showing_cookie, showing_csrf)[0] == 200
        assert web.post("/api/push", {"subscription": away_sub}, away_cookie, away_csrf)[0] == 200
        bad = dict(away_sub, endpoint="http://192.0.2.1/push")      # plain http elsewhere: never sent to
        assert web.post("/api/push", {"subscription": bad}, away_cookie, away_csrf)[0] == 400
        # One device has the inbox open and visible: it is shown every job that needs you.
        stream = Stream(web, showing_cookie)
        page = stream.first("hello")["page"]
        assert web.post("/api/view", {"page": page, "job": None, "visible": True}, showing_cookie, showing_csrf)[0] == 200
        job_id = dispatch(daemon, ["sh", "-c", f"echo 'shall I use {SECRET}?'; read line"], name="pushed")
        wait_for(lambda: service.received, timeout=20, what="a push")
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline:            # a bounded watch: no second push
            assert [path for path, _, _ in service.received] == ["/away"]
            time.sleep(0.05)
        _, headers, body = service.received[0]
        assert headers["Content-Encoding"] == "aes128gcm" and headers["Authorization"].startswith("vapid t=")
        note = json.loads(http_ece.decrypt(body, private_key=away_key, auth_secret=away_auth, version="aes128gcm"))
        assert note["id"] == job_id and "pushed" in note["title"]
        assert SECRET not in json.dumps(note) and "***" in note["body"]
        stream.close()
    finally:
        service.close()


def test_behind_a_proxy_a_made_up_forwarded_address_escapes_no_limit():
    from roost.web.guard import RATE_FAILURES, Guard, Refused

    guard = Guard("127.0.0.1", 7717, "http", "https://box.example.ts.net", behind_proxy=True)
    for number in range(RATE_FAILURES):
        guard.failed({"REMOTE_ADDR": "127.0.0.1", "HTTP_X_FORWARDED_FOR": f"10.0.0.{number}"})
    with pytest.raises(Refused) as refused:
        guard.check_rate({"REMOTE_ADDR": "127.0.0.1", "HTTP_X_FORWARDED_FOR": "10.9.9.9"})
    assert refused.value.status == 429
    # The proxy's public name and origin are this server's; others are not.
    guard.check_host({"HTTP_HOST": "box.example.ts.net"})
    guard.check_origin({"HTTP_ORIGIN": "https://box.example.ts.net"}, changing=True)
    with pytest.raises(Refused):
        guard.check_origin({"HTTP_ORIGIN": "https://evil.example.ts.net"}, changing=True)


def test_the_page_holds_the_fleet_and_its_stream_sends_only_what_came_after(web, daemon):
    job_id = dispatch(daemon, ["sh", "-c", "echo 'ready?'; read line"], name="</script><script>alert(1)</script>")
    wait_row(daemon, job_id, lambda row: row["waitingFor"], what="the question")
    cookie, csrf = web.pair()
    _, _, page = web.request("GET", "/", cookie=cookie)
    text = page.decode()
    assert "<script>alert(1)" not in text            # no text in the data block can close it
    data = text.split('<script id="roost-snapshot" type="application/json">')[1].split("</script>")[0]
    snapshot = json.loads(data)
    assert any(row["id"] == job_id and row["name"].startswith("</script>") for row in snapshot["rows"])
    stream = Stream(web, cookie)            # no since: the whole fleet
    stream.first("snapshot")
    stream.close()
    current = Stream(web, cookie, f"/api/stream?since={snapshot['version']}")     # as the page opens it
    current.first("hello")
    daemon.call("rename", id=job_id, name="renamed")
    current.first("rows", where=lambda message: any(row["name"] == "renamed" for row in message["rows"]))
    assert [message["kind"] for message in current.messages].count("snapshot") == 0
    current.close()


def test_machines_named_as_the_hubs_each_row_marked_and_answered_on_its_own(daemon):
    """`--host local`: this machine as one of several (no ssh): rows carry their host and
    an id of HOST:ID, and an answer goes to the row's machine with the job's own id."""
    web = Web(daemon, "--host", "local")
    try:
        job_id = dispatch(daemon, ["sh", "-c", "read line; echo got $line; sleep 30"])
        wait_row(daemon, job_id, lambda row: row["waitingFor"], what="the read")
        cookie, csrf = web.pair()
        stream = Stream(web, cookie)
        snapshot = stream.first("snapshot", where=lambda message: any(row["id"] == f"local:{job_id}"
                                                                     for row in message["rows"]))
        stream.close()
        row = next(row for row in snapshot["rows"] if row["id"] == f"local:{job_id}")
        assert row["host"] == "local" and snapshot["hosts"] == ["local up"]
        status, _ = web.post("/api/reply", {"id": f"local:{job_id}", "text": "there"}, cookie, csrf)
        assert status == 200
        wait_for(lambda: "got there" in daemon.call("peek", id=job_id)["text"], what="the answer on its machine")
    finally:
        web.stop()
