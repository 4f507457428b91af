"""Run every benchmark and write bench/RESULTS.md with the machine the figures came from.

    scripts/bench            # or: .venv/bin/python bench/run.py [wire startup jobs ...]
    scripts/bench --beside REV wire jobs replies events

Each bench module has `measure() -> dict` and `report(figures) -> markdown`; the floor
each compares against is measured in the same run. `--beside REV` measures each named
suite twice in the same run, first with REV's daemon (a worktree of it; the bench's own
code is this checkout's) and then with this checkout's, and the section gets a table of
the two side by side (the figures each module's `headline(figures)` names)."""

import importlib
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

SUITES = [
    ("wire", "The wire: ping over the socket"),
    ("contracts", "The ops' contracts: a request's arguments checked against its op's row"),
    ("startup", "CLI start-up"),
    ("jobs", "Jobs: idle cost, spawn, ping under load"),
    ("pty_spawn", "A job's pty: the keeper's spawn against pexpect.spawn"),
    ("terminal", "A job's terminal: throughput and loop pauses"),
    ("reboot", "A machine that restarts: 200 jobs resumed after a power cut"),
    ("replies", "Replies: `roost reply` to the agent's on_reply"),
    ("events", "The feed and the peers: pushes to 1000 subscribers, `send` to 500 agents"),
    ("git", "Git for the task board: worktree add and land against plain git"),
    ("board", "The task board: `task list` of 200, `prepare` and `merge` against plain git"),
    ("trust", "The trust boundary: is a connection's process inside a job, with 500 jobs"),
    ("jail", "The jail: a job's start and an idle job's memory, jailed beside unjailed"),
    ("schedules", "Schedules: 1000 held, idle CPU, how late a due run starts"),
    ("concierge", "The concierge's digests: one over 500 sessions, and an hour of a busy fleet"),
    ("hub", "The hub: 500 jobs, 20 of them printing"),
    ("web", "roost web: first paint at 500 jobs, a change to the page, idle pages, beside the hub"),
    ("radar", "The overlap radar: 20 worktrees of a 10,000-file repository"),
    ("unread", "Unread answers: one job's eight connections that never read"),
    ("hosts", "Other machines: `roost --host` over ssh (a real sshd on 127.0.0.1)"),
    ("states", "Honest states: the kernel's word on a job, per look and at 500 idle jobs"),
    ("spend", "What the fleet spends: 1 GB of transcripts read against ccusage, 50 live sessions followed"),
]
# Sections a script of their own measures (not `scripts/bench`: they need what CI has
# not got), each (name, title, module with `report`, the command that measures it).
SCRIPTED = [
    ("agents", "Real agents under roost: the built-in profiles (`scripts/try-agents`)", "try_agents",
     "scripts/try-agents"),
    ("kill_replies", "Replies across kill -9 of the daemon (`scripts/kill-replies`)", "kill_replies",
     "scripts/kill-replies"),
    ("limits", "Real agents at their usage limits, resumed at the reset (`scripts/try-agents limits`)",
     "try_limits", "scripts/try-agents limits"),
    ("agents_spend", "Real agents' spend as roost reads it, against what the model served (`scripts/try-agents spend`)",
     "try_spend", "scripts/try-agents spend"),
]
STORED = os.path.join(HERE, "results.json")


def machine():
    cpu = "unknown"
    try:
        with open("/proc/cpuinfo") as handle:
            for line in handle:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return (f"{platform.system()} {platform.release()}, {platform.machine()}, {os.cpu_count()} cores "
            f"({cpu}), {mem:.0f} GiB, Python {platform.python_version()}")


def load_stored():
    try:
        with open(STORED) as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return {}


# What the benches write themselves is no change to the code they measured.
OWN_OUTPUT = ("bench/RESULTS.md", "bench/results.json")


def commit():
    """The commit measured, and whether its code was changed in the checkout."""
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True, cwd=HERE).stdout.strip()
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True,
                            text=True, cwd=HERE).stdout.splitlines()
    changed = [line for line in status if line[3:] not in OWN_OUTPUT]
    return f"{head} with uncommitted changes" if changed else head


def store(stored, name, figures, seconds, beside=None):
    stored[name] = {"figures": figures, "seconds": seconds,
                    "at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                    "commit": commit(), "machine": machine()}
    if beside is not None:
        stored[name]["beside"] = beside
    with open(STORED, "w") as handle:
        json.dump(stored, handle, indent=1)


def record(name, figures, seconds):
    """Keep one section's figures (a script of its own measured them) and write
    RESULTS.md again with every section; returns that section's text."""
    stored = load_stored()
    store(stored, name, figures, seconds)
    return write(stored)[name]


def section(name, title, module_name, how, stored):
    entry = stored.get(name)
    if entry is None:
        return f"## {title}\n\nnot measured yet: `{how}`\n"
    module = importlib.import_module(module_name)
    return (f"## {title}\n\n{module.report(entry['figures'])}\n\n{_beside_table(module, entry)}"
            f"(measured {entry['at']} at commit {entry['commit']} in {entry['seconds']} s"
            f" on: {entry['machine']})\n")


def _beside_table(module, entry):
    beside = entry.get("beside")
    if not beside or not hasattr(module, "headline"):
        return ""
    before = dict(module.headline(beside["figures"]))
    rows = [f"| {what} | {before.get(what, '')} | {text} |" for what, text in module.headline(entry["figures"])]
    return (f"Side by side in the same run: {beside['commit']}'s daemon measured first, then this "
            f"commit's, by the same bench code.\n\n| measure | {beside['commit']} | {entry['commit']} |\n"
            "|---|---|---|\n" + "\n".join(rows) + "\n\n")


def write(stored):
    """RESULTS.md from every section's last figures; {name: its section's text}."""
    sections = {name: section(name, title, name, f"scripts/bench {name}", stored) for name, title in SUITES}
    sections.update({name: section(name, title, module, how, stored) for name, title, module, how in SCRIPTED})
    text = ("# Benchmark results\n\nWritten by `scripts/bench` (`scripts/bench SUITE...` measures only "
            "those; the others keep their last figures) and, for the sections it names, by a script of "
            "their own. Each compares against a floor measured in the same run. The raw figures are in "
            "`bench/results.json`.\n\n" + "\n".join(sections.values()))
    with open(os.path.join(HERE, "RESULTS.md"), "w") as handle:
        handle.write(text)
    return sections


def main(names, beside=None):
    """Measure the named suites (all by default); the others keep their last figures,
    so RESULTS.md always holds every suite, each with when and where it was measured.
    `beside`: a revision whose daemon is measured first in the same run."""
    stored = load_stored()
    checkout = _checkout(beside) if beside else None
    try:
        for name, _ in SUITES:
            if names and name not in names:
                continue
            module = importlib.import_module(name)
            before = None
            if checkout is not None:
                print(f"bench: {name} with {beside}'s daemon ...", file=sys.stderr, flush=True)
                os.environ["ROOST_BENCH_CODE"] = checkout
                try:
                    before = {"commit": _short(beside), "figures": module.measure()}
                finally:
                    del os.environ["ROOST_BENCH_CODE"]
            print(f"bench: {name} ...", file=sys.stderr, flush=True)
            started = time.monotonic()
            figures = module.measure()
            store(stored, name, figures, round(time.monotonic() - started), before)
    finally:
        if checkout is not None:
            subprocess.run(["git", "worktree", "remove", "--force", checkout], cwd=HERE, capture_output=True)
    print("\n".join(write(stored).values()))


def _short(revision):
    return subprocess.run(["git", "rev-parse", "--short", revision], capture_output=True, text=True,
                          cwd=HERE, check=True).stdout.strip()


def _checkout(revision):
    """A detached worktree of `revision`, to run its daemon beside this checkout's."""
    path = tempfile.mkdtemp(prefix="roost-beside-")
    done = subprocess.run(["git", "worktree", "add", "--detach", path, revision], capture_output=True,
                          text=True, cwd=HERE)
    if done.returncode != 0:
        sys.exit(f"bench: no checkout of {revision}: {done.stderr.strip()}")
    return path


if __name__ == "__main__":
    arguments = sys.argv[1:]
    revision = None
    if arguments[:1] == ["--beside"]:
        if len(arguments) < 2:
            sys.exit("usage: run.py [--beside REV] [SUITE ...]")
        revision, arguments = arguments[1], arguments[2:]
    main(arguments, revision)
