"""The overlap radar (issue 20) on a repository of 10,000 files with 20 live worktrees:
the refresh of all 20 as after a restart (nothing known yet: each worktree's diff and
status read, every overlapping pair predicted by `git merge-tree`), and what one quiet
moment of a holder costs (its worktree read again and compared with the 19 others, whose
files are known). The floor is the two git commands the radar runs for one worktree,
typed by hand: `git diff --name-only base...tip` and `git status --porcelain`.

roost runs as the daemon runs it: the daemon's own parts (roost.daemon.services, never
started: no socket, no keeper) in a process under the daemon's gevent patching, with
dulwich's reads on the threadpool. A greenlet ticking every millisecond meanwhile
records the longest the loop was held (off the loop: it should stay a few ms).

    .venv/bin/python bench/radar.py          # prints the figures
"""

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, HERE)

import git as git_bench  # noqa: E402  (bench/git.py: the 10,000-file repository)

WORKTREES = 20
QUIET_ROUNDS = 20
FLOOR_ROUNDS = 20
AIM_MS = 50


def git(cwd, *args):
    return git_bench.git(cwd, *args)


def make_worktrees(repo, scratch):
    """20 branches, each with a commit of 5 files of its own and one shared with its
    neighbour (10 overlapping pairs, half of them conflicting), and 2 uncommitted edits."""
    trees = []
    for number in range(WORKTREES):
        path = os.path.join(scratch, f"t{number}")
        branch = f"roost/t{number + 1}-bench"
        git(repo, "worktree", "add", "--quiet", "-b", branch, path, "main")
        for index in range(5):
            with open(os.path.join(path, f"d{number:02}", f"f{index:03}.txt"), "a") as handle:
                handle.write(f"task {number}\n")
        shared = os.path.join(path, "d99", f"f{number // 2:03}.txt")
        with open(shared) as handle:
            lines = handle.readlines()
        # pairs of even number conflict (the same first line), odd ones apart (first and last)
        where = 0 if number % 2 == 0 or (number // 2) % 2 == 0 else len(lines) - 1
        lines[where] = f"changed by task {number}\n"
        with open(shared, "w") as handle:
            handle.writelines(lines)
        git(path, "commit", "--quiet", "-am", f"task {number}")
        for index in range(2):
            with open(os.path.join(path, f"d{number:02}", f"f{50 + index:03}.txt"), "a") as handle:
                handle.write("not committed\n")
        trees.append((path, branch))
    return trees


def serve(scratch, repo, trees):
    """The radar in this process, patched as the daemon is: its figures, as JSON."""
    from roost.daemon import patching

    patching.patch()
    import gevent

    from roost import blocking
    from roost import git as roost_git
    from roost.daemon.services import Services

    blocking.use_threadpool()
    home = os.path.join(scratch, "h")
    os.mkdir(home, 0o700)
    services = Services(home, os.path.join(home, "roost.sock"), 0o022)
    board, radar = services.board, services.radar
    base = roost_git.ref_sha(roost_git.repository_of(repo), "main")
    for path, branch in trees:
        task = board.add(f"bench {branch}", None, [], os.path.realpath(repo), {"who": "user", "whoId": None})
        task.update(state="claimed", owner={"id": "nobody", "name": "nobody"})
        task["workspace"] = {"path": os.path.realpath(path), "branch": branch, "baseRef": "main", "baseSha": base,
                             "stage": "working", "note": None}
    board.save()
    held = {"longest": 0.0}

    def tick():
        last = time.perf_counter()
        while True:
            gevent.sleep(0.001)
            now = time.perf_counter()
            held["longest"] = max(held["longest"], now - last - 0.001)
            last = now

    ticker = gevent.spawn(tick)
    gevent.sleep(0.01)
    started = time.perf_counter()
    for task in board.tasks:
        radar.refresh(task["id"])
    cold_ms = (time.perf_counter() - started) * 1000
    cold_held = held["longest"] * 1000
    pairs = sum(len(task["workspace"].get("overlaps") or []) for task in board.tasks) // 2
    conflicting = sum(1 for task in board.tasks for entry in task["workspace"].get("overlaps") or []
                      if entry.get("conflicts")) // 2
    held["longest"] = 0.0
    quiet = []
    for round_number in range(QUIET_ROUNDS):
        number = round_number % WORKTREES
        task = board.tasks[number]
        with open(os.path.join(task["workspace"]["path"], f"d{number:02}", "f060.txt"), "a") as handle:
            handle.write(f"round {round_number}\n")          # a change the refresh finds
        started = time.perf_counter()
        radar.refresh(task["id"])
        quiet.append((time.perf_counter() - started) * 1000)
    ticker.kill()
    services.bus.flush()
    return {"cold_ms": round(cold_ms, 1), "cold_held_ms": round(cold_held, 1), "pairs": pairs,
            "conflicting": conflicting, "quiet": summary(quiet), "quiet_held_ms": round(held["longest"] * 1000, 1)}


def summary(times):
    return {"median_ms": round(statistics.median(times), 2), "min_ms": round(min(times), 2),
            "max_ms": round(max(times), 2), "runs": len(times)}


def floor(repo, trees):
    times = []
    for round_number in range(FLOOR_ROUNDS):
        path, branch = trees[round_number % WORKTREES]
        started = time.perf_counter()
        git(repo, "diff", "--name-only", f"main...{branch}")
        git(path, "status", "--porcelain")
        times.append((time.perf_counter() - started) * 1000)
    return summary(times)


def measure():
    scratch = tempfile.mkdtemp(prefix="rb-radar-", dir="/tmp")
    try:
        repo = git_bench.make_repository(os.path.join(scratch, "repo"))
        trees = make_worktrees(repo, scratch)
        figures = {"floor": floor(repo, trees)}
        done = subprocess.run([sys.executable, os.path.abspath(__file__), "--serve", scratch, repo,
                               json.dumps(trees)], env={**os.environ, "PYTHONPATH": ROOT}, capture_output=True,
                              text=True, timeout=600)
        if done.returncode != 0:
            raise RuntimeError(f"the radar's process failed: {done.stderr[-2000:]}")
        figures.update(json.loads(done.stdout.strip().splitlines()[-1]))
        figures["git"] = git(scratch, "--version")
        return figures
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def report(figures):
    quiet, floor_figures = figures["quiet"], figures["floor"]
    verdict = "met" if quiet["median_ms"] <= AIM_MS else "missed"
    return "\n".join([
        "| measure (10,000 files, 20 worktrees) | floor | roost | aim |", "|---|---:|---:|---|",
        f"| one quiet moment of a holder: its worktree read again, compared with the 19 others | "
        f"{floor_figures['median_ms']} ms (min {floor_figures['min_ms']}) | {quiet['median_ms']} ms (min "
        f"{quiet['min_ms']}, max {quiet['max_ms']}) | {AIM_MS} ms: {verdict} |",
        f"| the refresh of all 20 with nothing known (after a restart) | | {figures['cold_ms']} ms | |",
        "",
        f"{figures['pairs']} overlapping pairs, {figures['conflicting']} of them predicted to conflict by "
        f"`git merge-tree`. Medians of {quiet['runs']} quiet moments, each after a change to the worktree; the "
        "floor is `git diff --name-only main...branch` and `git status --porcelain` of one worktree from fork to "
        f"exit ({figures['git']}). The longest the event loop was held meanwhile: {figures['quiet_held_ms']} ms "
        f"(quiet moments), {figures['cold_held_ms']} ms (the refresh of all 20): git's waits are cooperative.",
    ])


if __name__ == "__main__":
    if sys.argv[1:2] == ["--serve"]:
        print(json.dumps(serve(sys.argv[2], sys.argv[3], json.loads(sys.argv[4]))))
    else:
        print(report(measure()))
