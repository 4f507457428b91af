"""`roost web` (issue 30) against a daemon with 500 jobs (480 waiting at a prompt, 20
printing a line every 100 ms), beside the hub on the same daemon in the same run:

- the page's first full paint: Chromium (Debian's, headless, driven by Playwright) opens
  the page with a paired cookie; from the navigation's start to the page's own mark
  after it drew the snapshot (inbox, fleet, board, feed), PAINTS times;
- a state change to the page: a row renamed (`rename`) to its new name shown in the open
  page (a MutationObserver's timestamp), EVENTS times; beside it the same rename to the
  hub's screen (the new name in what the hub writes to its pty);
- the server's CPU: `roost web` with four open pages, with the 20 printing and with
  nothing changing, and the daemon's CPU with and without the four pages; beside it the
  hub's CPU in the same two states.

    .venv/bin/python bench/web.py          # prints the figures
"""

import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from urllib.parse import urlsplit

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, HERE)

from benchkit import percentile, wait  # noqa: E402
from hub import HubOnPty, dispatch, full_screen  # noqa: E402
from jobs import Daemon, cpu_seconds  # noqa: E402

WAITING = 480
PRINTING = 20
PAINTS = 10
EVENTS = 200
PAGES = 4
CPU_SECONDS = 10.0
SETTLE_S = 130.0        # from the jobs' start to the daemon's idle CPU (see measure)
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
HEADLESS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync"]
PREFIXES = ("bcdfghjk", "mnpqrstv")
AIMS = {"paint_ms": 300.0, "event_p99_ms": 100.0, "idle_cpu_percent": 1.0}
# A name's arrival in the page, timed by the page itself (epoch ms, this machine's clock).
OBSERVE = """() => {
  window.roostSeen = {};
  new MutationObserver((records) => {
    const at = performance.timeOrigin + performance.now();
    for (const record of records) {
      for (const node of record.addedNodes) {
        for (const link of (node.querySelectorAll ? node.querySelectorAll('a.name') : [])) {
          if (!(link.textContent in window.roostSeen)) window.roostSeen[link.textContent] = at;
        }
      }
    }
  }).observe(document.body, {childList: true, subtree: true});
}"""


class Web:
    def __init__(self, env):
        self.process = subprocess.Popen([sys.executable, "-m", "roost", "web", "--listen", "127.0.0.1:0"],
                                        env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                        start_new_session=True)
        self.url = self.process.stdout.readline().decode().strip()
        parts = urlsplit(self.url)
        self.base = f"{parts.scheme}://{parts.netloc}"
        self.env = env

    def pairing(self):
        return subprocess.run([sys.executable, "-m", "roost", "web", "pair"], env=self.env, capture_output=True,
                              text=True, check=True).stdout.strip()

    def cpu(self):
        return cpu_seconds(self.process.pid)

    def close(self):
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def cpu_percent(read, seconds):
    before = read()
    time.sleep(seconds)
    return round(100 * (read() - before) / seconds, 2)


def first_paints(browser, web):
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    page.goto(web.pairing())           # pairs: the context keeps the cookie
    page.wait_for_selector("body.drawn", timeout=60000)
    page.close()
    paints = []
    for _ in range(PAINTS):
        page = context.new_page()
        page.goto(web.base + "/")
        page.wait_for_selector("body.drawn", timeout=60000)
        paints.append(page.evaluate("() => performance.getEntriesByName('roost-drawn')[0].startTime"))
        page.close()
    return context, paints


def event_times(daemon, page, hub, job_id):
    """(to the page, to the hub) in ms for EVENTS renames of one waiting row."""
    page.bring_to_front()        # a tab in the background gets no animation frames
    page.evaluate(OBSERVE)
    to_page, to_hub = [], []
    for number in range(EVENTS):
        # curses writes only the cells that changed: two words that differ in every cell
        # (and repeat no letter, which it could send as a repeat) make each rename whole.
        word = PREFIXES[number % 2]
        name = f"{word}-{number:03}"
        sent = time.time() * 1000
        sent_monotonic = time.monotonic()
        daemon.call("rename", id=job_id, name=name)
        seen = wait(lambda: page.evaluate(f"() => window.roostSeen[{json.dumps(name)}]"), 10, "the page",
                    interval=0.002)
        to_page.append(seen - sent)
        at = wait(lambda: hub.first(word.encode(), sent_monotonic), 10, "the hub", interval=0.001)
        to_hub.append((at - sent_monotonic) * 1000)
        time.sleep(0.02)
    return to_page, to_hub


def measure():
    from playwright.sync_api import sync_playwright

    daemon = Daemon()
    web = hub = None
    try:
        for number in range(WAITING):
            dispatch(daemon, ["sh", "-c", "printf 'ready> '; exec cat"], f"waits-{number:03}")
        printers = [dispatch(daemon, [sys.executable, os.path.join(ROOT, "tests", "agents", "works_a_while.py"),
                                      "3600", "0.1"], f"prints-{number:02}") for number in range(PRINTING)]
        wait(lambda: len(daemon.call("list")["jobs"]) == WAITING + PRINTING, 120, "every job listed")
        # The kernel's looks at a quiet plain job come after 1, 2, 4 ... s, then every 60 s
        # (docs/states.md): the daemon's idle CPU is measured once they have backed off, so
        # that it is the pages' cost, not the jobs' first two minutes.
        backed_off = time.monotonic() + SETTLE_S
        time.sleep(2.0)
        web = Web(daemon.env)
        hub = HubOnPty(daemon.env)
        full_screen(hub)
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=HEADLESS)
            context, paints = first_paints(browser, web)
            # The row the hub shows first (the oldest waiting): renamed, both must show it.
            first = min((row for row in daemon.call("list")["jobs"] if row["waitingFor"]),
                        key=lambda row: row["stateSince"])
            pages = [context.new_page() for _ in range(PAGES)]
            for page in pages:
                page.goto(web.base + "/")
                page.wait_for_selector("body.drawn", timeout=60000)
            to_page, to_hub = event_times(daemon, pages[0], hub, first["id"])
            daemon_pid = daemon.process.pid
            busy_web = cpu_percent(web.cpu, CPU_SECONDS)
            busy_hub = cpu_percent(hub.cpu, CPU_SECONDS)
            for job_id in printers:
                daemon.call("stop", id=job_id)
            time.sleep(2.0)
            idle_web = cpu_percent(web.cpu, CPU_SECONDS)
            idle_hub = cpu_percent(hub.cpu, CPU_SECONDS)
            time.sleep(max(0.0, backed_off - time.monotonic()))
            idle_daemon_pages = cpu_percent(lambda: cpu_seconds(daemon_pid), CPU_SECONDS)
            for page in pages:
                page.close()
            browser.close()
        web.close()
        web = None
        idle_daemon_alone = cpu_percent(lambda: cpu_seconds(daemon_pid), CPU_SECONDS)
        return {
            "jobs": WAITING + PRINTING, "printing": PRINTING, "pages": PAGES,
            "load_average": round(os.getloadavg()[0], 1),
            "paint_ms": {"median": round(statistics.median(paints), 1), "max": round(max(paints), 1)},
            "event_ms": {"p50": round(percentile(to_page, 0.5), 1), "p99": round(percentile(to_page, 0.99), 1),
                         "max": round(max(to_page), 1)},
            "hub_event_ms": {"p50": round(percentile(to_hub, 0.5), 1), "p99": round(percentile(to_hub, 0.99), 1),
                             "max": round(max(to_hub), 1)},
            "web_cpu_percent": busy_web, "hub_cpu_percent": busy_hub,
            "web_idle_cpu_percent": idle_web, "hub_idle_cpu_percent": idle_hub,
            "daemon_idle_cpu_percent": {"with_pages": idle_daemon_pages, "without": idle_daemon_alone},
        }
    finally:
        if hub is not None:
            hub.close()
        if web is not None:
            web.close()
        daemon.close()


def _aim(value, aim, unit):
    return f"{aim:g} {unit}: {'met' if value <= aim else 'missed'}"


def headline(figures):
    return [("first paint (median)", f"{figures['paint_ms']['median']} ms"),
            ("event to page (p99)", f"{figures['event_ms']['p99']} ms"),
            ("four idle pages: roost web's CPU", f"{figures['web_idle_cpu_percent']} %")]


def report(figures):
    paint, event, hub = figures["paint_ms"], figures["event_ms"], figures["hub_event_ms"]
    daemon = figures["daemon_idle_cpu_percent"]
    return "\n".join([
        "| measure | roost web | the hub, beside it | aim |", "|---|---:|---:|---|",
        f"| first full paint of the page at {figures['jobs']} jobs, median / max of {PAINTS} (Chromium) | "
        f"{paint['median']} / {paint['max']} ms | | {_aim(paint['median'], AIMS['paint_ms'], 'ms')} |",
        f"| a row's change (rename) to the open page / to the hub's screen, p50 / p99 / max of {EVENTS} | "
        f"{event['p50']} / {event['p99']} / {event['max']} ms | {hub['p50']} / {hub['p99']} / {hub['max']} ms | "
        f"{_aim(event['p99'], AIMS['event_p99_ms'], 'ms')} (p99) |",
        f"| CPU with {figures['pages']} pages open, {figures['printing']} rows changing (over {CPU_SECONDS:.0f} s) | "
        f"{figures['web_cpu_percent']} % | {figures['hub_cpu_percent']} % | |",
        f"| CPU with {figures['pages']} pages open, nothing changing | {figures['web_idle_cpu_percent']} % | "
        f"{figures['hub_idle_cpu_percent']} % | {_aim(figures['web_idle_cpu_percent'], AIMS['idle_cpu_percent'], '%')} |",
        f"| the daemon's CPU, nothing changing, with the {figures['pages']} pages / without `roost web` | "
        f"{daemon['with_pages']} % / {daemon['without']} % | | |",
        "", f"{figures['jobs']} jobs: {figures['jobs'] - figures['printing']} waiting at a prompt, "
        f"{figures['printing']} printing a line every 100 ms; the machine's load average at the end: "
        f"{figures.get('load_average', '?')} on {os.cpu_count()} cores (shared). The paint runs from the navigation's start to the "
        "page's own mark once it drew the snapshot (inbox, fleet groups, board, feed). A change's time runs "
        "from just before the `rename` request to the new name's node added in the page (the page's clock, "
        "the same machine's) and, for the hub, to the first chunk it writes to its pty holding the name. The "
        "CPU is the `roost web` process's (the server; the browser's own is not roost's).",
    ])


if __name__ == "__main__":
    result = measure()
    print(json.dumps(result, indent=1))
    print(report(result))
