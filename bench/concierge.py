"""The concierge's digests: building one over 500 sessions and 1000 events (the time, and
its size against the 8 KiB limit), and the bytes the concierge is sent in an hour of a
busy fleet (50 sessions, 200 state changes) against a conductor that re-reads
everything (the whole feed so far and every session) on a one-minute heartbeat.

Both sides are built by roost.concierge.digests.build from the same rows and events, so
each line of either costs the same bytes. roost's side is a digest per change (the
worst case: no two changes in one burst), each with what changed and the needs not said
before; the conductor's is the feed and the fleet, whole, sixty times an hour.

    .venv/bin/python bench/concierge.py          # prints the figures
"""

import json
import os
import random
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from roost.clock import now_ms  # noqa: E402
from roost.concierge.digests import DEFAULT_BYTES, build  # noqa: E402

BIG_ROWS = 500
BIG_EVENTS = 1000
BUILDS = 50
FLEET = 50
CHANGES = 200
HEARTBEATS = 60
AIM_MS = 20.0


def make_row(number, now, rng):
    waiting = rng.random() < 0.2
    return {"id": f"{number:08x}", "name": f"agent-{number}", "state": "blocked" if waiting else "working",
            "status": "waiting" if waiting else "busy", "waitingFor": "question" if waiting else None,
            "question": f"Shall I go on with step {number}?" if waiting else None,
            "choices": ["yes", "no"] if waiting else [], "summary": f"working on part {number} of the refactor",
            "stateSince": now - rng.randrange(600_000), "role": None}


def make_event(number, now, rows, rng):
    row = rows[rng.randrange(len(rows))]
    return {"at": now - (BIG_EVENTS - number) * 1000, "kind": "state", "id": row["id"], "name": row["name"],
            "text": rng.choice(["working", "waiting for an answer", "done", "waiting for a dialog"])}


def build_big():
    rng = random.Random(1)
    now = int(time.time() * 1000)
    rows = [make_row(number, now, rng) for number in range(BIG_ROWS)]
    events = [make_event(number, now, rows, rng) for number in range(BIG_EVENTS)]
    orders = [{"id": n, "text": f"standing order {n}", "when": "daily 09:00", "by": "user", "at": now,
               "lastAt": None, "nextAt": now + 3_600_000, "count": 0} for n in range(1, 11)]
    timings, text = [], ""
    for _ in range(BUILDS):
        started = time.perf_counter()
        text, _ = build(events, rows, orders, [], set(), now=now_ms())
        timings.append((time.perf_counter() - started) * 1000)
    timings.sort()
    return {"median_ms": round(timings[len(timings) // 2], 2), "max_ms": round(timings[-1], 2),
            "bytes": len(text.encode()), "cut": "Cut to fit" in text}


def busy_hour():
    rng = random.Random(2)
    start = int(time.time() * 1000)
    rows = [make_row(number, start, rng) for number in range(FLEET)]
    feed, said, ours = [], set(), 0
    change_times = sorted(rng.randrange(3_600_000) for _ in range(CHANGES))
    beats = [minute * 60_000 for minute in range(1, HEARTBEATS + 1)]
    conductor = 0
    for at in change_times:
        while beats and beats[0] <= at:      # the conductor's heartbeats before this change
            text, _ = build(feed, rows, [], [], set(), limit=1 << 30, now=now_ms())
            conductor += len(text.encode())
            beats.pop(0)
        row = rows[rng.randrange(FLEET)]
        waiting = row["status"] != "waiting"
        row.update(status="waiting" if waiting else "busy", state="blocked" if waiting else "working",
                   waitingFor="question" if waiting else None, stateSince=start + at,
                   question=f"Shall I go on with {row['name']}?" if waiting else None)
        event = {"at": start + at, "kind": "state", "id": row["id"], "name": row["name"],
                 "text": "waiting for an answer" if waiting else "working"}
        feed.append(event)
        waits = {f"{r['id']}:{r['stateSince']}" for r in rows if r["status"] == "waiting"}
        said &= waits
        text, new = build([event], rows, [], [], said, changed={row["id"]}, now=now_ms())
        said |= new
        ours += len(text.encode())
    for _ in beats:
        text, _ = build(feed, rows, [], [], set(), limit=1 << 30, now=now_ms())
        conductor += len(text.encode())
    return {"roost_bytes": ours, "roost_digests": CHANGES, "conductor_bytes": conductor,
            "conductor_reads": HEARTBEATS}


def measure():
    return {"big": build_big(), "hour": busy_hour()}


def report(figures):
    big, hour = figures["big"], figures["hour"]
    met = "met" if big["median_ms"] < AIM_MS and big["bytes"] <= DEFAULT_BYTES else "not met"
    ratio = hour["conductor_bytes"] / max(1, hour["roost_bytes"])
    return "\n".join([
        "| measure | roost | against | aim |",
        "|---|---|---|---|",
        f"| a digest over {BIG_ROWS} sessions and {BIG_EVENTS} events, median / max of {BUILDS} | "
        f"{big['median_ms']} / {big['max_ms']} ms, {big['bytes']} bytes{' (cut to fit)' if big['cut'] else ''} | | "
        f"under {AIM_MS:.0f} ms and {DEFAULT_BYTES} bytes: {met} |",
        f"| bytes sent to the concierge in an hour: {FLEET} sessions, {CHANGES} state changes | "
        f"{hour['roost_bytes'] // 1024} KiB in {hour['roost_digests']} digests | "
        f"{hour['conductor_bytes'] // 1024} KiB in {hour['conductor_reads']} re-reads of everything "
        f"({ratio:.0f}x) | |",
    ])


if __name__ == "__main__":
    figures = measure()
    print(json.dumps(figures, indent=1))
    print(report(figures))
