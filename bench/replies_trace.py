"""Where a reply's time goes inside the daemon: the replies bench's setup with the daemon
run through this file, which wraps the delivery path's steps with clocks (nothing else
changes), then a table of each step's share, per reply.

    .venv/bin/python bench/replies_trace.py [AGENTS [REPLIES]]     # default 500 1000

Steps, each from CLOCK_MONOTONIC (shared by the bench, the daemon and the agents):
written -> the reply op starts (the daemon wakes, reads, parses, queues); op start -> the
reply book's durable write starts (its record waits for its batch); the write (the book
writer's store.append_many through the threadpool: append, fdatasync);
write done -> the deliver event is sent; sent -> the agent's on_reply is called; and
the op's end -> its answer read by the bench.
"""

import json
import os
import sys
import tempfile
import time

from benchkit import percentile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
STEPS = ("total", "to_op", "to_write", "write", "to_send", "send_to_agent", "answer_after")


def serve_traced(out_path):
    """The daemon, with its delivery path's steps timed; the times go to out_path when
    it stops."""
    sys.path.insert(0, ROOT)
    from roost.daemon import patching

    patching.patch()
    from roost import store
    from roost.daemon import main, services
    from roost.jobs import agent_links
    from roost.jobs.replies import ReplyDesk

    trace = []

    def clocked(owner, name, label, key):
        original = getattr(owner, name)

        def wrapper(*args, **kwargs):
            started = time.monotonic()
            try:
                return original(*args, **kwargs)
            finally:
                ended = time.monotonic()
                keys = key(args)
                for one in keys if isinstance(keys, list) else [keys]:
                    trace.append((label, one, started, ended))

        setattr(owner, name, wrapper)

    def book_texts(args):
        """The replies a batch of the book writer's appends adds (one key each)."""
        texts = []
        for _path, data in args[0]:
            for line in data.splitlines():
                item = json.loads(line).get("add") or {}
                if "text" in item:
                    texts.append("replies.log:" + str(item["text"]))
        return texts

    clocked(ReplyDesk, "reply", "op", lambda args: args[2])
    clocked(store, "append_many", "write", book_texts)
    clocked(agent_links, "_deliver_event", "send", lambda args: args[1]["text"])
    stop = services.Services.stop

    def stop_and_dump(self, *args, **kwargs):
        with open(out_path, "w") as handle:
            json.dump(trace, handle)
        return stop(self, *args, **kwargs)

    services.Services.stop = stop_and_dump
    return main.main(["--foreground"])


def breakdown(trace, timeline):
    spans = {}
    for label, key, started, ended in trace:
        spans.setdefault((label, key), (started, ended))
    rows = []
    for text, written, called, answered in timeline:
        op = spans.get(("op", text))
        write = spans.get(("write", "replies.log:" + text))
        send = spans.get(("send", text))
        if not (op and write and send):
            continue
        rows.append({"total": called - written, "to_op": op[0] - written, "to_write": write[0] - op[0],
                     "write": write[1] - write[0], "to_send": send[0] - write[1],
                     "send_to_agent": called - send[0], "answer_after": answered - op[1]})
    return rows


def main(agents, samples):
    sys.path.insert(0, HERE)
    import replies

    out = tempfile.NamedTemporaryFile(prefix="rr-trace-", suffix=".json", delete=False).name
    replies.DAEMON = [sys.executable, os.path.abspath(__file__), "--daemon", out]
    bench = replies.Bench()
    try:
        bench.start_agents(agents)
        bench.time_replies(bench.jobs, 50)
        bench.timeline = []
        bench.time_replies(bench.jobs, samples)
    finally:
        bench.close()
    with open(out) as handle:
        trace = json.load(handle)
    os.unlink(out)
    rows = breakdown(trace, bench.timeline)
    # The first `agents` replies after the warm-up are most agents' first (a round's
    # worth): shown apart from the rest, as a first round's tail is often its own.
    for title, part in ((f"{len(rows)} replies to {agents} agents", rows),
                        (f"... the first {agents} (mostly each agent's first reply)", rows[:agents]),
                        ("... the rest", rows[agents:])):
        if not part:
            continue
        print(f"{title} (ms)\n")
        print("| step | p50 | p90 | p99 | max |\n|---|---:|---:|---:|---:|")
        for step in STEPS:
            values = [row[step] * 1000 for row in part]
            print(f"| {step} | {percentile(values, 0.5):.3f} | {percentile(values, 0.9):.3f} | "
                  f"{percentile(values, 0.99):.3f} | {max(values):.3f} |")
        print()
    print("\nslowest:")
    for row in sorted(rows, key=lambda row: -row["total"])[:5]:
        print("  " + ", ".join(f"{step} {row[step] * 1000:.2f}" for step in STEPS))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--daemon"]:
        sys.exit(serve_traced(sys.argv[2]))
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 500, int(sys.argv[2]) if len(sys.argv) > 2 else 1000)
