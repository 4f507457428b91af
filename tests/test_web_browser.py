"""`roost web` in a real browser (issue 30's Done when): Debian's Chromium, headless,
driven by Playwright (its own browser downloads are not used). One daemon, one `roost
web` and one browser for the module; each test pairs its own browser context (a fresh
cookie jar), as a person's new phone would."""

import http.server
import json
import os
import re
import shutil
import threading

import pytest

from conftest import DaemonProcess, _kill_leftovers, short_tempdir, tracebacks_in_log, wait_for
from jobkit import agent, dispatch, wait_row
from statekit import NODE_QUESTION, sh, waiting
from webkit import DIALOG_TERM, Web

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="chromium is not installed (scripts/setup)")
HEADLESS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--host-resolver-rules=MAP evil.test 127.0.0.1"]
SECRET = "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123"
TIMEOUT_MS = 15000


@pytest.fixture(scope="module")
def daemon():
    base = short_tempdir()
    home = os.path.join(base, "h")
    process = DaemonProcess(home).start()
    yield process
    process.stop()
    _kill_leftovers(home)
    problems = tracebacks_in_log(home)
    shutil.rmtree(base, ignore_errors=True)
    assert not problems, problems[-4000:]


@pytest.fixture(scope="module")
def web(daemon):
    started = Web(daemon)
    yield started
    started.stop()
    assert "Traceback" not in started.log_text(), started.log_text()[-3000:]


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=HEADLESS)
        yield launched
        launched.close()


@pytest.fixture
def context(browser):
    opened = browser.new_context(viewport={"width": 390, "height": 844})
    opened.set_default_timeout(TIMEOUT_MS)
    yield opened
    opened.close()


def paired_page(context, web, url=None):
    page = context.new_page()
    response = page.goto(url or web.new_pairing())
    assert response.status == 200 and page.url == web.base + "/"
    page.wait_for_selector("body.drawn")
    return page


def screen_shows(page, text):
    from playwright.sync_api import expect

    expect(page.locator("#screen")).to_contain_text(text, timeout=TIMEOUT_MS)


def typed(directory):
    try:
        with open(os.path.join(directory, "input.log"), encoding="utf-8") as handle:
            return handle.read().splitlines()
    except FileNotFoundError:
        return []


def test_pairing_with_the_printed_url_once(browser, web):
    first = browser.new_context()
    try:
        page = paired_page(first, web, web.pair_url)        # the URL `roost web` printed first
        assert page.get_by_role("heading", name="Needs you").is_visible()
        assert page.reload().status == 200                  # the cookie holds
    finally:
        first.close()
    second = browser.new_context()
    try:
        assert second.new_page().goto(web.pair_url).status == 401      # the token was spent
        assert second.new_page().goto(web.base + "/").status == 401    # no cookie
    finally:
        second.close()


def test_the_inbox_answers_a_dialog_and_a_question_exactly_once(context, web, daemon, tmp_path):
    job_id = dispatch(daemon, agent("dialog_first.py"), cwd=str(tmp_path), term=DIALOG_TERM, name="trusting")
    asker = dispatch(daemon, agent("asks_question.py"), name="db-choice")
    wait_row(daemon, job_id, lambda row: row["waitingFor"] == "dialog", what="the dialog")
    page = paired_page(context, web)
    item = page.locator(f'li.need[data-id="{job_id}"]')
    item.get_by_text("Do you trust the files in this folder?").wait_for()
    page.locator(f'li.need[data-id="{asker}"]').get_by_text("Choose [1-3]:").wait_for()
    item.get_by_role("button", name="1. Yes, proceed").click()
    wait_for(lambda: typed(tmp_path) == ["dialog: 1"], what="the choice typed into the dialog")
    wait_row(daemon, job_id, lambda row: row["waitingFor"] and row["waitingFor"] != "dialog", what="the prompt")
    reply = page.locator(f'li.need[data-id="{job_id}"]').get_by_role("textbox", name="Reply to trusting")
    reply.fill("build the thing")
    reply.press("Enter")
    wait_for(lambda: typed(tmp_path)[-1:] == ["prompt: build the thing"], what="the reply typed at the prompt")
    page.wait_for_timeout(500)          # a second typing would have come by now
    assert typed(tmp_path) == ["dialog: 1", "prompt: build the thing"]
    # Not now: the question leaves the inbox on this browser (the daemon reminds later).
    asking = page.locator(f'li.need[data-id="{asker}"]')
    asking.get_by_role("button", name="Not now: remind me in an hour").click()
    asking.wait_for(state="detached")
    page.get_by_text("put off (Not now) until").wait_for()
    page.reload()
    page.wait_for_selector("body.drawn")
    assert page.locator(f'li.need[data-id="{asker}"]').count() == 0


def test_a_row_roost_cannot_read_is_marked_and_kept_out_of_the_inbox(context, web, daemon):
    """A plain job that reads its terminal is in the inbox; node's readline, which waits
    on its terminal among other files, is `?` among the working rows (issue 27)."""
    from playwright.sync_api import expect

    if shutil.which("node") is None:
        pytest.skip("node is not installed")
    asks = dispatch(daemon, sh('printf "your name? "; read name; sleep 300'), name="plain-asks")
    unknown = dispatch(daemon, ["node", "-e", NODE_QUESTION], name="node-plain")
    try:
        wait_row(daemon, asks, waiting, what="the read on the row")
        wait_row(daemon, unknown, lambda row: row["state"] == "blocked" and row["status"] is None, timeout=20,
                 what="node judged unknown")
        page = paired_page(context, web)
        page.locator(f'li.need[data-id="{asks}"]').get_by_text("your name?").wait_for()
        expect(page.locator(f'section.group-working li.row[data-id="{unknown}"] span.muted')).to_have_text(
            re.compile(r"^ \? "))
        assert page.locator(f'li.need[data-id="{unknown}"]').count() == 0
    finally:
        for job_id in (asks, unknown):
            daemon.call("stop", id=job_id)


def test_the_key_bar_reaches_the_terminal(context, web, daemon, tmp_path):
    raw = tmp_path / "raw.log"
    job_id = dispatch(daemon, agent("raw_logger.py", raw), name="keys")
    wait_row(daemon, job_id, lambda row: row["waitingFor"], what="its prompt")
    page = paired_page(context, web)
    page.goto(f"{web.base}/#job={job_id}")
    page.locator("#screen .line").first.wait_for()
    screen_shows(page, ">")
    for name in ("Esc", "Ctrl-C"):
        page.get_by_role("toolbar", name="Keys").get_by_role("button", name=name, exact=True).click()
        page.get_by_text(f"{name} sent").wait_for()
    wait_for(lambda: raw.exists() and raw.read_bytes() == b"\x1b\x03", what="Esc then Ctrl-C, once each")
    box = page.get_by_role("textbox", name="Text to type")
    box.fill("hello")
    box.press("Enter")
    screen_shows(page, "got: hello")


def test_a_secret_in_a_question_arrives_masked_and_agent_text_as_text(context, web, daemon):
    job_id = dispatch(daemon, ["sh", "-c", f"echo 'deploy with {SECRET} now?'; read line"], name="masked")
    html = "<img src=x onerror=alert(1)><b>bold</b> &amp;"
    shown = dispatch(daemon, ["sh", "-c", f"echo '{html}'; read line"], name="<i>named</i>")
    wait_row(daemon, job_id, lambda row: row["waitingFor"], what="the question")
    wait_row(daemon, shown, lambda row: row["waitingFor"], what="the other question")
    page = paired_page(context, web)
    page.locator(f'li.need[data-id="{job_id}"]').get_by_text("deploy with *** now?").wait_for()
    item = page.locator(f'li.need[data-id="{shown}"]')
    item.get_by_text(html, exact=True).wait_for()              # shown as the agent wrote it
    assert item.get_by_role("link", name="<i>named</i>").is_visible()
    assert item.locator("img, b, i").count() == 0
    page.goto(f"{web.base}/#job={job_id}")
    screen_shows(page, "deploy with ***")
    assert SECRET not in page.content()


def test_a_revoked_device_is_cut_off(context, web, daemon):
    page = paired_page(context, web)
    device = json.loads(daemon.cli("web", "devices", "--json").stdout)["devices"][-1]["name"]
    assert daemon.cli("web", "revoke", device).returncode == 0
    page.get_by_text("not paired").wait_for()
    assert page.reload().status == 401


class EvilPage(http.server.BaseHTTPRequestHandler):
    """A page of another origin that posts to roost web with the person's cookie."""

    target = None

    def do_GET(self):
        body = (f"<script>fetch({self.target!r} + '/api/keys', {{method: 'POST', credentials: 'include', mode: 'no-cors',"
                f" headers: {{'Content-Type': 'text/plain'}}, body: JSON.stringify({{id: 'x', keys: ['C-c']}})}})"
                ".then(() => document.title = 'sent', () => document.title = 'sent');</script>").encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_a_foreign_origin_or_host_is_refused(context, web):
    paired_page(context, web)
    EvilPage.target = web.base
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), EvilPage)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        evil = context.new_page()
        evil.goto(f"http://127.0.0.1:{server.server_address[1]}/")
        from playwright.sync_api import expect

        expect(evil).to_have_title("sent", timeout=TIMEOUT_MS)
        wait_for(lambda: '"POST /api/keys HTTP/1.1" 403' in web.log_text(), what="the foreign post refused")
    finally:
        server.shutdown()
        server.server_close()
    rebound = context.new_page().goto(f"http://evil.test:{web.port}/")     # DNS rebinding
    assert rebound.status == 421


def test_read_only_shows_the_controls_disabled_and_refuses_by_hand(browser, daemon):
    web = Web(daemon, "--read-only")
    opened = browser.new_context()
    try:
        job_id = dispatch(daemon, ["sh", "-c", "read line; echo got $line"], name="read-only")
        wait_row(daemon, job_id, lambda row: row["waitingFor"], what="the read")
        page = paired_page(opened, web)
        item = page.locator(f'li.need[data-id="{job_id}"]')
        assert item.get_by_role("textbox", name="Reply to read-only").is_disabled()
        assert item.get_by_role("button", name="Send").is_disabled()
        page.goto(f"{web.base}/#job={job_id}")
        assert page.get_by_role("button", name="Esc").is_disabled()
        status = page.evaluate("""async (id) => (await fetch('/api/reply', {method: 'POST',
            headers: {'Content-Type': 'application/json',
                      'X-CSRF-Token': document.querySelector('meta[name="csrf-token"]').content},
            body: JSON.stringify({id, text: 'yes'})})).status""", job_id)
        assert status == 403
        assert "got yes" not in daemon.call("peek", id=job_id)["text"]
    finally:
        opened.close()
        web.stop()
