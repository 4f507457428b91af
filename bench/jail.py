"""The jail's cost (issue 26): from `dispatch` to a job's first output, and the memory of
an idle job, jailed (the default) beside unjailed (`sandbox: false`), in one run on one
daemon.

- start: `dispatch` sent to `cat`'s first output read by the daemon (its output.log has
  it), ROUNDS x STARTS jobs of each kind, interleaved (jailed, unjailed, jailed, ...), so
  a busy moment of the shared machine costs both alike. Aim: the jail adds under 15 ms
  at the median.
- memory: IDLE jobs of each kind showing a prompt and waiting on input (as idle agents
  do); per job, the processes it runs and their memory: the sum of their PSS (each
  shared page counted once, spread over those that share it) and of their RSS. The
  jail's own processes (its shell, bwrap and bwrap's pid 1) are the difference.

    .venv/bin/python bench/jail.py          # prints the figures
"""

import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from benchkit import percentile, wait  # noqa: E402
from jobs import Daemon, rss_kib  # noqa: E402
from real_runs import job_processes  # noqa: E402

ROUNDS = 3
STARTS = 20
IDLE = 20
AIM_MS = 15.0
KINDS = (("jailed", True), ("unjailed", False))


def folder(daemon):
    """The jobs' working directory (a jail writes it; the rest of /tmp is the jail's own)."""
    path = os.path.join(daemon.base, "work")
    os.makedirs(path, exist_ok=True)
    return path


def dispatch(daemon, command, jailed):
    extra = {} if jailed else {"sandbox": False}
    return daemon.call("dispatch", kind="shell", cwd=folder(daemon), command=command, env={}, name="",
                       sessionFile="", origin="dispatch", **extra)["id"]


def to_first_output(daemon, sample, jailed):
    started = time.perf_counter()
    job_id = dispatch(daemon, ["cat", sample], jailed)
    log = os.path.join(daemon.home, "jobs", job_id, "output.log")
    while True:
        try:
            if os.path.getsize(log):
                break
        except OSError:
            pass
        time.sleep(0.0002)
    return (time.perf_counter() - started) * 1000, job_id


def starts(daemon):
    sample = os.path.join(folder(daemon), "sample.txt")
    with open(sample, "w") as handle:
        handle.write("first output\n")
    for jailed in (True, False):           # each kind's first start (a jail's probe) is not counted
        to_first_output(daemon, sample, jailed)
    rounds = []
    for _ in range(ROUNDS):
        times = {name: [] for name, _ in KINDS}
        for _ in range(STARTS):
            for name, jailed in KINDS:
                elapsed, job_id = to_first_output(daemon, sample, jailed)
                times[name].append(elapsed)
        rounds.append({name: {"median_ms": round(statistics.median(values), 2),
                              "p90_ms": round(percentile(values, 0.9), 2)} for name, values in times.items()})
    added = [item["jailed"]["median_ms"] - item["unjailed"]["median_ms"] for item in rounds]
    return {"rounds": rounds, "added_ms_per_round": [round(value, 2) for value in added],
            "added_ms_median": round(statistics.median(added), 2)}


def pss_kib(pid):
    try:
        with open(f"/proc/{pid}/smaps_rollup") as handle:
            for line in handle:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def idle(daemon):
    command = ["sh", "-c", "printf 'ready> '; exec cat"]
    ids = {name: [dispatch(daemon, command, jailed) for _ in range(IDLE)] for name, jailed in KINDS}

    def waiting():
        rows = {row["id"]: row for row in daemon.call("list")["jobs"]}
        return all(rows.get(job_id, {}).get("state") == "blocked" for group in ids.values() for job_id in group)
    wait(waiting, 120, "every idle job to wait")
    time.sleep(1.0)
    found = {}
    for name, group in ids.items():
        processes = {job_id: job_processes(job_id) for job_id in group}
        counts = [len(pids) for pids in processes.values()]
        pss = [sum(pss_kib(pid) for pid in pids) for pids in processes.values()]
        rss = [sum(rss_kib(pid) for pid in pids) for pids in processes.values()]
        found[name] = {"jobs": len(group), "processes_per_job": statistics.median(counts),
                       "pss_kib_per_job": round(statistics.median(pss)), "rss_kib_per_job": round(statistics.median(rss))}
    found["added_pss_kib_per_job"] = found["jailed"]["pss_kib_per_job"] - found["unjailed"]["pss_kib_per_job"]
    return found


def measure():
    daemon = Daemon()
    try:
        return {"start": starts(daemon), "idle": idle(daemon)}
    finally:
        daemon.close()


def report(figures):
    start, memory = figures["start"], figures["idle"]
    lines = ["| `dispatch` to `cat`'s first output read by the daemon | jailed: median / p90 | unjailed: median / p90 "
             "| the jail adds (median) |", "|---|---|---|---|"]
    for number, (item, added) in enumerate(zip(start["rounds"], start["added_ms_per_round"]), 1):
        lines.append(f"| round {number} ({STARTS} of each, interleaved) | {item['jailed']['median_ms']} / "
                     f"{item['jailed']['p90_ms']} ms | {item['unjailed']['median_ms']} / {item['unjailed']['p90_ms']} ms "
                     f"| {added} ms |")
    verdict = "met" if start["added_ms_median"] < AIM_MS else "NOT met"
    lines += ["", f"The jail adds {start['added_ms_median']} ms at the median of the rounds "
                  f"(aim: under {AIM_MS:g} ms: {verdict}).", "",
              "| an idle job (a prompt, waiting on input) | processes | PSS | RSS |", "|---|---|---|---|"]
    for name, _ in KINDS:
        item = memory[name]
        lines.append(f"| {name} ({item['jobs']} jobs, median) | {item['processes_per_job']:g} | "
                     f"{item['pss_kib_per_job']} KiB | {item['rss_kib_per_job']} KiB |")
    lines += ["", f"A jailed idle job costs {memory['added_pss_kib_per_job']} KiB more (PSS: the jail's shell, "
                  "bwrap and bwrap's pid 1, their shared pages counted once); the daemon's and the keeper's "
                  "share of a job is the same either way (`jobs`)."]
    return "\n".join(lines)


def headline(figures):
    return [("the jail adds at start (median)", f"{figures['start']['added_ms_median']} ms"),
            ("a jailed idle job's extra PSS", f"{figures['idle']['added_pss_kib_per_job']} KiB")]


if __name__ == "__main__":
    print(report(measure()))
