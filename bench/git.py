"""Git for the task board: roost's worktree add and land against the same work done with
plain git, on a repository of 10,000 files, in the same run; and, for each read that
dulwich and the git CLI can both do, what each costs (the figures behind the choices in
roost/git/).

roost runs as the daemon runs it: in a process of its own under the daemon's gevent
patching, with dulwich's work on the threadpool (`roost.blocking.use_threadpool()`); it times each
call itself and answers over a pipe. The floor is the git command a person would type,
timed from fork to exit. The two alternate, round by round, on the same repository.

    .venv/bin/python bench/git.py          # prints the figures
"""

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

DIRECTORIES, FILES_EACH = 100, 100      # 10,000 files
HISTORY = 300                           # commits behind base, for the ancestry reads
BRANCH_COMMITS = 10
ROUNDS = 10
ADD_ROUNDS = 5
READ_RUNS = 30
AIMS = {"add": 1.3, "land": 1.5}


def git(cwd, *args, input=None):
    done = subprocess.run(["git", *args], cwd=cwd, input=input, capture_output=True)
    if done.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)}: {done.stderr.decode(errors='replace')}")
    return done.stdout.decode().strip()


def timed_git(cwd, *args):
    started = time.perf_counter()
    git(cwd, *args)
    return (time.perf_counter() - started) * 1000


def make_repository(path):
    """10,000 files in 100 directories, one commit of them, and HISTORY commits after."""
    os.makedirs(path)
    git(path, "init", "--quiet", "--initial-branch=main")
    git(path, "config", "user.name", "Bench")
    git(path, "config", "user.email", "bench@roost.invalid")
    for directory in range(DIRECTORIES):
        os.makedirs(os.path.join(path, f"d{directory:02}"))
        for number in range(FILES_EACH):
            with open(os.path.join(path, f"d{directory:02}", f"f{number:03}.txt"), "w") as handle:
                handle.write(f"file {directory} {number}\n" * 8)
    git(path, "add", "-A")
    git(path, "commit", "--quiet", "-m", "10,000 files")
    tree, head = git(path, "rev-parse", "HEAD^{tree}"), git(path, "rev-parse", "HEAD")
    for number in range(HISTORY):
        head = git(path, "commit-tree", tree, "-p", head, "-m", f"history {number}")
    git(path, "update-ref", "refs/heads/main", head)
    return path


class Roost:
    """roost.git in a process of its own, patched as the daemon is."""

    def __init__(self):
        self.process = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--serve"],
                                        env={**os.environ, "PYTHONPATH": ROOT}, stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True)

    def call(self, **request):
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        answer = json.loads(self.process.stdout.readline())
        if "error" in answer:
            raise RuntimeError(answer["error"])
        return answer

    def close(self):
        self.process.stdin.close()
        self.process.wait(30)


def serve():
    from roost.daemon import patching

    patching.patch()
    from roost import blocking
    from roost import git as roost_git

    blocking.use_threadpool()
    for line in sys.stdin:
        request = json.loads(line)
        started = time.perf_counter()
        try:
            repo = roost_git.repository_of(request["root"])
            if request["op"] == "spawn":        # one run of git: gevent's subprocess, roost's runner
                answer = spawn_costs(request["root"])
            elif request["op"] == "jail":       # a run in a tree's files: jailed, and with the settings alone
                answer = jail_costs(repo, request["path"])
            elif request["op"] == "add":        # what the board's prepare does
                base = roost_git.checked_out_branch(repo)
                branch = roost_git.task_branch(repo, request["id"], request["title"])
                roost_git.add_worktree(repo, request["path"], branch, base)
                answer = {"branch": branch}
            else:
                result = roost_git.land(repo, request["branch"], "main", mode=request["mode"])
                answer = {"outcome": result.outcome}
        except Exception as error:
            answer = {"error": repr(error)}
        answer["ms"] = (time.perf_counter() - started) * 1000
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


def spawn_costs(root):
    import subprocess as patched_subprocess     # gevent's, in this process

    from roost.git import command

    argv = ["git", "-C", root, "rev-parse", "HEAD"]
    with open("/proc/self/status") as handle:
        rss = int(handle.read().split("VmRSS:")[1].split()[0])
    return {"subprocess_ms": _median_ms(lambda: patched_subprocess.run(argv, capture_output=True), READ_RUNS),
            "roost_ms": _median_ms(lambda: command.run(["rev-parse", "HEAD"], root), READ_RUNS),
            "rss_mib": round(rss / 1024)}


def jail_costs(repo, path):
    """`git status` of a worktree and `git merge-tree` of two commits, through roost.git,
    in their jail (jail.py) and with the settings alone (what runs where bwrap cannot)."""
    from roost.git import command, jail

    place = roost_git_checkout(repo, path)
    runs = {"status_ms": (["--no-optional-locks", "status", "--porcelain=v1", "-z"], place),
            "merge_tree_ms": (["merge-tree", "--write-tree", "--name-only", "main", "work"], repo.root)}
    jailed, alone = jail.Jails(), jail.Jails()
    alone.works = False
    times = {mode: {key: [] for key in runs} for mode in ("jailed", "settings")}
    for round_number in range(READ_RUNS + 1):       # the modes alternate, run by run
        for mode, jails in (("jailed", jailed), ("settings", alone)):
            command._jails = jails
            for key, (args, cwd) in runs.items():
                started = time.perf_counter()
                command.run(args, cwd)
                if round_number:                    # the first round warms the caches
                    times[mode][key].append((time.perf_counter() - started) * 1000)
    return {mode: {key: round(statistics.median(values), 3) for key, values in by_key.items()}
            for mode, by_key in times.items()}


def roost_git_checkout(repo, path):
    from roost import git as roost_git

    return roost_git.checkout_of(repo, path)


def summary(times):
    return {"median_ms": round(statistics.median(times), 2), "min_ms": round(min(times), 2), "runs": len(times)}


def measure_add(roost, repo, scratch):
    floor, ours = [], []
    for number in range(ADD_ROUNDS + 1):    # the first round of each warms the caches
        path = os.path.join(scratch, f"plain{number}")
        ms = timed_git(repo, "worktree", "add", "--quiet", "-b", f"plain/{number}", path, "main")
        floor.append(ms)
        git(repo, "worktree", "remove", "--force", path)
        git(repo, "branch", "-D", f"plain/{number}")
        path = os.path.join(scratch, f"roost{number}")
        answer = roost.call(op="add", root=repo, path=path, id=number + 1, title=f"Bench task {number}")
        ours.append(answer["ms"])
        git(repo, "worktree", "remove", "--force", path)
        git(repo, "branch", "-D", answer["branch"])
    return {"floor": summary(floor[1:]), "roost": summary(ours[1:])}


def make_branch(repo, scratch):
    """A branch of BRANCH_COMMITS commits on base, each changing one file."""
    path = os.path.join(scratch, "branch")
    git(repo, "worktree", "add", "--quiet", "-b", "work", path, "main")
    for number in range(BRANCH_COMMITS):
        with open(os.path.join(path, f"d{number:02}", "f000.txt"), "a") as handle:
            handle.write(f"change {number}\n")
        git(path, "commit", "--quiet", "-am", f"change {number}")
    return git(repo, "rev-parse", "main")


def measure_land(roost, repo, old, mode, checked_out):
    """roost's land against `git merge` in the main checkout (or, with base checked out
    nowhere, against `git update-ref`), base set back to `old` before each round."""
    by_hand = {"ff": ["merge", "--quiet", "--ff-only", "work"],
               "no-ff": ["merge", "--quiet", "--no-ff", "--no-edit", "work"]}[mode]
    if not checked_out:
        by_hand = ["update-ref", "refs/heads/main", git(repo, "rev-parse", "work"), old]

    def set_back():
        if checked_out:
            git(repo, "reset", "--quiet", "--hard", old)
        else:
            git(repo, "update-ref", "refs/heads/main", old)

    if not checked_out:
        git(repo, "checkout", "--quiet", "--detach", old)
    floor, ours = [], []
    for _ in range(ROUNDS + 1):
        set_back()
        floor.append(timed_git(repo, *by_hand))
        set_back()
        answer = roost.call(op="land", root=repo, branch="work", mode=mode)
        if answer["outcome"] != "landed":
            raise RuntimeError(f"land: {answer}")
        ours.append(answer["ms"])
    set_back()
    if not checked_out:
        git(repo, "checkout", "--quiet", "main")
    return {"floor": summary(floor[1:]), "roost": summary(ours[1:]), "by_hand": "git " + " ".join(by_hand[:3])}


def measure_reads(repo, scratch):
    """Each read both can do, dulwich in-process against a run of git (unpatched)."""
    from dulwich import graph, porcelain
    from dulwich.refs import check_ref_format
    from dulwich.repo import Repo
    from dulwich.worktree import list_worktrees

    worktree = os.path.join(scratch, "branch")
    root_commit = git(repo, "rev-list", "--max-parents=0", "main").encode()
    main_sha = git(repo, "rev-parse", "main").encode()

    def dulwich_discover():
        with Repo.discover(os.path.join(worktree, "d01")) as found:
            return found.commondir()

    def dulwich_ref(name):
        with Repo(repo) as found:
            return found.refs[name]

    def dulwich_ancestor():
        with Repo(repo) as found:
            return graph.can_fast_forward(found, root_commit, main_sha)

    def dulwich_worktrees():
        with Repo(repo) as found:
            return list_worktrees(found)

    pairs = [
        ("repository of a directory", dulwich_discover,
         ["rev-parse", "--path-format=absolute", "--git-common-dir", "--show-toplevel"], os.path.join(worktree, "d01")),
        ("the main checkout's branch", lambda: dulwich_ref(b"HEAD"), ["symbolic-ref", "-q", "HEAD"], repo),
        ("a ref's sha", lambda: dulwich_ref(b"refs/heads/work"), ["rev-parse", "--verify", "-q", "refs/heads/work"], repo),
        (f"is merged: an ancestor {HISTORY} commits back", dulwich_ancestor,
         ["merge-base", "--is-ancestor", root_commit.decode(), main_sha.decode()], repo),
        ("is a worktree clean (status of 10,000 files)", lambda: porcelain.status(worktree),
         ["status", "--porcelain=v1", "-z"], worktree),
        ("list worktrees", dulwich_worktrees, ["worktree", "list", "--porcelain", "-z"], repo),
        ("check a branch name", lambda: check_ref_format(b"refs/heads/roost/t12-fix-it"),
         ["check-ref-format", "--branch", "roost/t12-fix-it"], repo),
    ]
    rows = []
    for name, in_process, args, cwd in pairs:
        runs = 3 if "status" in name else READ_RUNS
        rows.append({"read": name, "dulwich_ms": _median_ms(in_process, runs),
                     "git_ms": _median_ms(lambda: git(cwd, *args), runs)})
    return rows


def _median_ms(fn, runs):
    fn()
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        times.append((time.perf_counter() - started) * 1000)
    return round(statistics.median(times), 3)


def measure():
    scratch = tempfile.mkdtemp(prefix="rb-git-", dir="/tmp")
    roost = Roost()
    try:
        repo = make_repository(os.path.join(scratch, "repo"))
        figures = {"add": measure_add(roost, repo, scratch)}
        old = make_branch(repo, scratch)
        figures["land_ff"] = measure_land(roost, repo, old, "ff", checked_out=True)
        figures["land_no_ff"] = measure_land(roost, repo, old, "no-ff", checked_out=True)
        figures["land_update_ref"] = measure_land(roost, repo, old, "ff", checked_out=False)
        figures["reads"] = measure_reads(repo, scratch)
        figures["spawn"] = {key: value for key, value in roost.call(op="spawn", root=repo).items() if key != "ms"}
        figures["jail"] = {key: value for key, value in
                           roost.call(op="jail", root=repo, path=os.path.join(scratch, "branch")).items() if key != "ms"}
        figures["jail"]["floor"] = {
            "status_ms": _median_ms(lambda: git(os.path.join(scratch, "branch"), "status", "--porcelain=v1", "-z"),
                                    READ_RUNS),
            "merge_tree_ms": _median_ms(lambda: git(repo, "merge-tree", "--write-tree", "--name-only", "main", "work"),
                                        READ_RUNS)}
        figures["git"] = git(scratch, "--version")
        return figures
    finally:
        roost.close()
        shutil.rmtree(scratch, ignore_errors=True)


def report(figures):
    rows = [
        ("worktree add (the board's prepare: branch named, checked out) against `git worktree add -b`",
         figures["add"], AIMS["add"]),
        (f"land ff of a {BRANCH_COMMITS}-commit branch, base checked out, against `git merge --ff-only`",
         figures["land_ff"], AIMS["land"]),
        ("land no-ff (a merge commit), base checked out, against `git merge --no-ff`", figures["land_no_ff"], AIMS["land"]),
        ("land, base checked out nowhere (update-ref), against `git update-ref`", figures["land_update_ref"], None),
    ]
    lines = ["| measure (10,000 files) | floor | roost | roost / floor | aim |", "|---|---:|---:|---:|---|"]
    for name, pair, aim in rows:
        ratio = pair["roost"]["median_ms"] / pair["floor"]["median_ms"]
        verdict = "" if aim is None else f"{aim}x: {'met' if ratio <= aim else 'missed'}"
        lines.append(f"| {name} | {pair['floor']['median_ms']} ms | {pair['roost']['median_ms']} ms | "
                     f"{ratio:.2f} | {verdict} |")
    lines += ["", f"Medians of {ADD_ROUNDS} rounds (worktree add) and {ROUNDS} (land), alternating, after one "
              "round each to warm up; roost under the "
              f"daemon's patching, timed in its process; the floor timed from fork to exit ({figures['git']}).",
              "", "Each read both can do (what roost/git/ chose: the faster, unless git's own answer is the one "
              "that counts):", "", "| read | dulwich | git CLI |", "|---|---:|---:|"]
    for row in figures["reads"]:
        lines.append(f"| {row['read']} | {row['dulwich_ms']} ms | {row['git_ms']} ms |")
    spawn = figures["spawn"]
    lines += ["", f"One run of `git rev-parse HEAD` under the daemon's patching (a {spawn['rss_mib']} MiB process): "
              f"{spawn['subprocess_ms']} ms through gevent's `subprocess`, {spawn['roost_ms']} ms through roost's "
              "posix_spawn runner (roost/git/process.py); gevent forks in Python, so its cost grows with the process."]
    jail = figures.get("jail")
    if jail:
        lines += ["", "A git run that reads or writes a tree's files runs nothing a repository configures: in a jail "
                  "of its own (bubblewrap, with the repository's plain config; roost/git/jail.py), or where bwrap "
                  "cannot work with the settings alone (each driver the config names switched off, one more run "
                  "of `git config` to list them). Medians of "
                  f"{READ_RUNS} runs each, roost's under the daemon's patching:", "",
                  "| run | git by hand | roost, settings alone | roost, jailed | the jail's cost |",
                  "|---|---:|---:|---:|---:|"]
        for key, name in (("status_ms", "`git status` of a worktree (10,000 files)"),
                          ("merge_tree_ms", "`git merge-tree --write-tree` of base and a 10-commit branch")):
            cost = jail["jailed"][key] - jail["settings"][key]
            lines.append(f"| {name} | {jail['floor'][key]} ms | {jail['settings'][key]} ms | "
                         f"{jail['jailed'][key]} ms | {cost:+.2f} ms |")
    return "\n".join(lines)


if __name__ == "__main__":
    if sys.argv[1:] == ["--serve"]:
        serve()
    else:
        result = measure()
        print(json.dumps(result, indent=1))
        print(report(result))
