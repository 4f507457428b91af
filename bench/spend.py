"""What the fleet spends (issue 29): the first read of 1 GB of Claude Code transcripts
(500 sessions, generated) by roost's reader against ccusage on the same files, in one
run; and the cost of following 50 live sessions in a real daemon.

- The files are generated as Claude Code 2.1.197 writes them (tests/fixtures/agents/
  claude-code/2.1.197/spend): per response, one `assistant` line per content block
  (the usage repeated, output growing), tool results and user turns between them, a
  fifth of the sessions resumed into a second file that repeats their first lines. The
  generator knows the true totals. roost's reader is timed as the daemon runs it (one
  thread, each file from its start, line by line); ccusage (`ccusage claude daily
  --json --offline`, installed under /tmp with npm, ROOST_CCUSAGE names it) on the
  same folder; both totals against the truth.
- 50 jobs of a profile that reads Claude Code's records, each with its own session; the
  bench appends a response (three block lines) to a random session every 0.2 s, as the
  agents would write it, and times each from its last line written to the row's
  `spend` pushed to a subscriber (aim: within 1 s). The daemon's CPU over the minute,
  against the same daemon with the same 50 jobs writing nothing (aim: under 1% of a
  core more).

    .venv/bin/python bench/spend.py
"""

import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:0] = [HERE, ROOT]

from benchkit import percentile, wait  # noqa: E402
from jobs import Daemon, cpu_seconds  # noqa: E402

SESSIONS = 500
TARGET_BYTES = int(os.environ.get("SPEND_BENCH_BYTES") or 1 << 30)    # smaller for a quick look
LIVE = 50
WRITE_EVERY_S = 0.2
FOLLOW_S = float(os.environ.get("SPEND_BENCH_FOLLOW_S") or 60.0)
MODELS = ("claude-opus-4-8", "claude-sonnet-5", "claude-haiku-4-5")
CCUSAGE = os.environ.get("ROOST_CCUSAGE") or "/tmp/ccusage/node_modules/.bin/ccusage"


# -- the files ----------------------------------------------------------------------------

def _stamp(at):
    return time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(at))


def _response(session, at, rng, blocks=3):
    """(the lines of one response, its true [fresh input, output, cacheRead, cacheWrite])."""
    message, request = f"msg_{uuid.uuid4().hex[:24]}", f"req_{uuid.uuid4().hex[:24]}"
    model = rng.choice(MODELS)
    fresh, read, write, output = rng.randint(1, 400), rng.randint(0, 90_000), rng.randint(0, 3000), rng.randint(20, 4000)
    lines = []
    for block in range(1, blocks + 1):
        usage = {"input_tokens": fresh, "cache_creation_input_tokens": write, "cache_read_input_tokens": read,
                 "output_tokens": max(1, output * block // blocks), "service_tier": "standard"}
        text = "x" * rng.randint(200, 1800)
        lines.append(json.dumps({"parentUuid": str(uuid.uuid4()), "isSidechain": False, "userType": "external",
                                 "cwd": "/work/project", "sessionId": session, "version": "2.1.197",
                                 "gitBranch": "main", "entrypoint": "cli",
                                 "message": {"id": message, "type": "message", "role": "assistant", "model": model,
                                             "content": [{"type": "text", "text": text}], "stop_reason": None,
                                             "stop_sequence": None, "stop_details": None, "usage": usage},
                                 "requestId": request, "type": "assistant", "uuid": str(uuid.uuid4()),
                                 "timestamp": _stamp(at)}, separators=(",", ":")))
    return lines, [fresh, output, read, write]


def _tool_result(session, at, rng):
    return json.dumps({"type": "user", "sessionId": session, "timestamp": _stamp(at),
                       "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t",
                                                                "content": "y" * rng.randint(500, 12000)}]}},
                      separators=(",", ":"))


def generate(folder, rng):
    """500 sessions of about 2 MB in `folder`/projects/*, a fifth resumed into a second
    file; returns the true totals [fresh input, output, cacheRead, cacheWrite]."""
    truth = [0, 0, 0, 0]
    per_session = TARGET_BYTES // SESSIONS
    start = time.time() - 20 * 86400
    for index in range(SESSIONS):
        project = os.path.join(folder, "projects", f"-work-project-{index % 25}")
        os.makedirs(project, exist_ok=True)
        session = str(uuid.uuid4())
        written, at, kept = 0, start + index * 3000, []
        with open(os.path.join(project, session + ".jsonl"), "w", encoding="utf-8") as handle:
            while written < per_session:
                lines, count = _response(session, at, rng)
                lines.append(_tool_result(session, at, rng))
                text = "\n".join(lines) + "\n"
                handle.write(text)
                written += len(text)
                truth = [a + b for a, b in zip(truth, count)]
                if len(kept) < 200:
                    kept.append(text)
                at += 7
        if index % 5 == 0:      # resumed: a new file repeating the first lines, then its own
            again = str(uuid.uuid4())
            with open(os.path.join(project, again + ".jsonl"), "w", encoding="utf-8") as handle:
                handle.write("".join(kept))
                for _ in range(20):
                    lines, count = _response(again, at, rng)
                    handle.write("\n".join(lines) + "\n")
                    truth = [a + b for a, b in zip(truth, count)]
                    at += 7
    return truth


def folder_bytes(folder):
    return sum(os.path.getsize(os.path.join(directory, name)) for directory, _, names in os.walk(folder)
               for name in names)


# -- the first read -----------------------------------------------------------------------

READ_ALL = """
import glob, json, os, resource, sys, time
sys.path.insert(0, sys.argv[2])
from roost.spend.follow import LineFollower
from roost.spend.ledger import Ledger
from roost.spend.readers import read_batch
started = time.perf_counter()
ledger = Ledger()
for path in sorted(glob.glob(os.path.join(sys.argv[1], "projects", "*", "*.jsonl"))):
    follower, state, more = LineFollower(path), {}, True
    while more:                       # as the daemon's tracker reads a file (roost.spend.readers)
        batch, _, more = read_batch(follower, "claude-code", state)
        batch.apply(ledger)
whole, _ = ledger.totals()
print(json.dumps({"seconds": time.perf_counter() - started, "totals": whole,
                  "rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def roost_first_read(folder):
    done = subprocess.run([sys.executable, "-c", READ_ALL, folder, ROOT], capture_output=True, text=True, check=True)
    result = json.loads(done.stdout)
    fresh = result["totals"][0] - result["totals"][2] - result["totals"][3]
    return {"seconds": round(result["seconds"], 2), "rss_mib": round(result["rss_mib"]),
            "totals": [fresh] + result["totals"][1:]}


def ccusage_first_read(folder):
    if not os.path.exists(CCUSAGE):
        return {"none": f"ccusage is not installed ({CCUSAGE}; npm install ccusage under /tmp)"}
    started = time.perf_counter()
    done = subprocess.run([CCUSAGE, "claude", "daily", "--json", "--offline"], capture_output=True, text=True,
                          env={**os.environ, "CLAUDE_CONFIG_DIR": folder}, timeout=1800)
    seconds = time.perf_counter() - started
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        totals = json.loads(done.stdout)["totals"]
    except (ValueError, KeyError):
        return {"none": (done.stderr or done.stdout)[-300:]}
    return {"seconds": round(seconds, 2), "rss_mib": round(usage.ru_maxrss / 1024),
            "totals": [totals["inputTokens"], totals["outputTokens"], totals["cacheReadTokens"],
                       totals["cacheCreationTokens"]]}


# -- following live sessions ----------------------------------------------------------------

class Pushes(threading.Thread):
    """A subscriber: when each row's spend was pushed, by job id."""

    def __init__(self, socket):
        super().__init__(daemon=True)
        from roost.client.connection import Client
        self.client = Client.connect(socket, timeout=60)
        self.client.call("subscribe", {})
        self.seen = {}            # job id -> [(when, output tokens)]
        self.start()

    def run(self):
        try:
            while True:
                message = self.client.next_event()
                if message.get("event") == "rows":
                    now = time.monotonic()
                    for row in message["rows"]:
                        spend = row.get("spend")
                        if spend:
                            self.seen.setdefault(row["id"], []).append((now, spend["tokens"]["output"]))
        except Exception:
            return


def follow_live(rng):
    daemon = Daemon()
    claude_dir = os.path.join(daemon.base, "claude")
    work = os.path.join(daemon.base, "work")
    os.makedirs(work)
    with open(os.path.join(daemon.home, "roost.json"), "w") as handle:
        json.dump({"agentProfiles": {"recorded": {
            "command": ["sh", "-c", "exec sleep 3600", "{sessionId}"], "spendFrom": "claude-code",
            "provider": "anthropic", "term": {"settleMs": 500}}}}, handle)
    from roost.spend.sources import claude_project       # Claude Code's folder for a working directory
    project = os.path.join(claude_dir, "projects", claude_project(work))
    # There before the jobs start, as where Claude Code has run before: a `sleep` is read
    # as working from start to end (the kernel's word), so no turn's end makes roost look
    # for a folder made later, as a real agent's turns do.
    os.makedirs(project, exist_ok=True)
    try:
        jobs = []
        for number in range(LIVE):
            started = daemon.call("dispatch", kind="shell", cwd=work, command=[], env={"CLAUDE_CONFIG_DIR": claude_dir},
                                  name=f"live{number}", sessionFile="", origin="dispatch", profile="recorded")
            jobs.append(started["id"])
        sessions = {}
        for job_id in jobs:
            record = json.load(open(os.path.join(daemon.home, "jobs", job_id, "job.json")))
            sessions[job_id] = record["launch"]["sessionId"]
        time.sleep(3.0)        # started, and their directories watched
        pid = daemon.process.pid
        before = cpu_seconds(pid)
        time.sleep(FOLLOW_S / 2)
        idle = 100 * (cpu_seconds(pid) - before) / (FOLLOW_S / 2)
        pushes = Pushes(daemon.socket)
        written = {job_id: 0 for job_id in jobs}
        latencies, writes = [], []
        before = cpu_seconds(pid)
        deadline = time.monotonic() + FOLLOW_S
        while time.monotonic() < deadline:
            job_id = rng.choice(jobs)
            lines, count = _response(sessions[job_id], time.time(), rng)
            with open(os.path.join(project, sessions[job_id] + ".jsonl"), "a", encoding="utf-8") as handle:
                handle.write("\n".join(lines) + "\n")
            written[job_id] += count[1]
            writes.append((time.monotonic(), job_id, written[job_id]))
            time.sleep(WRITE_EVERY_S)
        busy = 100 * (cpu_seconds(pid) - before) / FOLLOW_S
        time.sleep(2.0)
        for at, job_id, output in writes:
            seen = [when for when, value in pushes.seen.get(job_id, ()) if value >= output]
            latencies.append((min(seen) - at) * 1000 if seen else None)
        missed = sum(1 for latency in latencies if latency is None)
        shown = [latency for latency in latencies if latency is not None]
        return {"jobs": LIVE, "responses": len(writes), "missed": missed,
                "p50_ms": round(percentile(shown, 0.5), 1) if shown else None,
                "p99_ms": round(percentile(shown, 0.99), 1) if shown else None,
                "max_ms": round(max(shown), 1) if shown else None,
                "cpu_idle_percent": round(idle, 2), "cpu_following_percent": round(busy, 2),
                "cpu_added_percent": round(busy - idle, 2)}
    finally:
        try:
            daemon.call("shutdown")
            daemon.process.wait(60)
        except Exception:
            daemon.process.kill()
        shutil.rmtree(daemon.base, ignore_errors=True)


def measure():
    rng = random.Random(29)
    folder = tempfile.mkdtemp(prefix="spend-bench-", dir="/tmp")
    try:
        started = time.perf_counter()
        truth = generate(folder, rng)
        figures = {"generated_seconds": round(time.perf_counter() - started, 1),
                   "bytes": folder_bytes(folder), "files": sum(len(names) for _, _, names in os.walk(folder)),
                   "truth": truth}
        # The files just written are in the page cache; their writeback is not charged to
        # whichever reader comes first. Then each reader twice, alternating, so neither
        # has the other's warm-up or the machine's quiet minute alone.
        os.sync()
        figures["roost"] = roost_first_read(folder)
        figures["ccusage"] = ccusage_first_read(folder)
        figures["roost_again"] = roost_first_read(folder)
        figures["ccusage_again"] = ccusage_first_read(folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    figures["live"] = follow_live(rng)
    return figures


def _cells(result, truth):
    if "none" in result:
        return f"— ({result['none']})", "", ""
    right = "right" if result["totals"] == truth else f"off: {result['totals']}"
    return f"{result['seconds']} s", f"{result['rss_mib']} MiB", right


def report(figures):
    truth = figures["truth"]
    size = figures["bytes"] / (1 << 30)
    lines = [f"The first read of {size:.2f} GiB of Claude Code transcripts ({figures['files']} files, 500 "
             f"sessions, a fifth resumed into a second file) against the truth {truth} (fresh input, output, "
             "cache read, cache write), after a sync, each reader twice in turn:", "",
             "| reader | time | peak memory | totals |", "|---|---:|---:|---|"]
    for name, key in (("roost (its reader, one thread, as the daemon runs it)", "roost"),
                      ("ccusage claude daily --json --offline", "ccusage"),
                      ("roost again", "roost_again"), ("ccusage again", "ccusage_again")):
        if key not in figures:
            continue
        cells = _cells(figures[key], truth)
        lines.append(f"| {name} | {cells[0]} | {cells[1]} | {cells[2]} |")
    live = figures["live"]
    lines += ["", f"Following {live['jobs']} live sessions in a daemon ({live['responses']} responses of three "
                  f"lines each over {FOLLOW_S:.0f} s): a response's spend in its row, pushed to a subscriber, "
                  f"p50 {live['p50_ms']} ms, p99 {live['p99_ms']} ms, max {live['max_ms']} ms (aim: within "
                  f"1000 ms; {live['missed']} never seen); the daemon's CPU {live['cpu_following_percent']}% of a "
                  f"core, against {live['cpu_idle_percent']}% with the same jobs writing nothing: "
                  f"{live['cpu_added_percent']}% more (aim: under 1%)."]
    return "\n".join(lines)


def headline(figures):
    return [("1 GB first read, roost", f"{figures['roost'].get('seconds')} s"),
            ("1 GB first read, ccusage", f"{figures['ccusage'].get('seconds', '—')} s"),
            ("live: p99 to the row", f"{figures['live']['p99_ms']} ms"),
            ("live: CPU added", f"{figures['live']['cpu_added_percent']}%")]


if __name__ == "__main__":
    print(json.dumps(measure(), indent=1))
