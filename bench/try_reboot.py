"""scripts/try-agents: a machine restart under the real agents (issue 19 item 2), each job
back in its own conversation.

Two jobs of each agent's built-in profile, started together in one work folder with
one home (one CODEX_HOME, one ~/.claude): what `--continue` and `resume --last` would
mix up. Each gets a turn with a marker of its own (`echo: MARK-<agent>-<n>`); then kill
-9 of the keeper, the daemon and every job's process at once, as a power cut; a new
daemon on the same home brings each back with its resume argv (its own session id:
given to Claude Code at launch, found in Codex's and pi's session files; aider's chat
history, a file of the job's own directory). Each job then
gets a second turn, and the fake model's request of that turn must carry the job's own
earlier marker and not the other job's. Timed: the new daemon's start to each job
waiting again.

    unshare -n -- .venv/bin/python bench/try_reboot.py [AGENT...]   # default: claude codex
                                                                   # (also pi, aider)
    scripts/try-agents reboot [AGENT...]                           # the same, through try_agents

Its figures go into the `agents` section of bench/RESULTS.md (`reboot`).
"""

import json
import os
import re
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.dirname(HERE)]

import agent_worlds  # noqa: E402
from real_runs import Daemon, job_processes, run_folder, wait_quietly, waiting  # noqa: E402

AGENTS = ("claude", "codex", "pi", "aider")
# aider keeps no session id: its chat history is a file of the job's own directory.
HISTORY = {"aider": "aider.chat.history.md"}
DEFAULT = ("claude", "codex")
MARKER = re.compile(r"MARK-[a-z]+-\d")
JOBS_EACH = 2


def serve_model(fake_path, log):
    """The fake model, logging for each request (as bench/timed_model.py does) also the
    markers anywhere in it: the earlier turns an agent sends again are in its body."""
    import timed_model

    timed_model.serve(fake_path, log, more=lambda body: {"markers": sorted(set(MARKER.findall(json.dumps(body))))})


class MarkedModel:
    def __init__(self, folder):
        fake = os.environ.get("ROOST_FAKE_LLM") or os.path.join(os.path.dirname(os.path.dirname(HERE)), "shared",
                                                                 "realagents", "fake_llm.py")
        self.log = os.path.join(folder, "model.jsonl")
        self.process = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--model", fake, self.log],
                                        stdout=subprocess.PIPE, text=True)
        line = self.process.stdout.readline()
        if not line.startswith("LISTENING "):
            raise RuntimeError(f"the fake model did not start: {line!r}")
        self.port = int(line.split()[1])

    def asked(self, text, with_tools):
        """The first request of a turn whose last user text has `text`, with when its
        answer ended (None while it has not)."""
        answered, found = {}, None
        try:
            with open(self.log, encoding="utf-8") as handle:
                entries = [json.loads(line) for line in handle if line.strip()]
        except FileNotFoundError:
            return None
        for entry in entries:
            if entry.get("answered") and "id" in entry:
                answered[entry["id"]] = entry["t"]
            elif found is None and entry.get("asked") and text in (entry.get("user") or "") \
                    and (entry.get("tools") or not with_tools):
                found = entry
        return None if found is None else dict(found, answered=answered.get(found["id"]))


def keeper_pid(home):
    with open(os.path.join(home, "keeper.lock")) as handle:
        return int(handle.read().split()[0])


def power_cut(daemon, job_ids, job_processes):
    """kill -9 of the keeper, the daemon and every process of the jobs, at once."""
    keeper = keeper_pid(daemon.home)
    pids = [pid for job_id in job_ids for pid in job_processes(job_id)]
    os.kill(keeper, signal.SIGKILL)
    daemon.process.kill()
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    daemon.process.wait(30)
    deadline = time.monotonic() + 30
    while any(job_processes(job_id) for job_id in job_ids):
        if time.monotonic() > deadline:
            raise RuntimeError("jobs' processes outlived the power cut")
        for job_id in job_ids:
            for pid in job_processes(job_id):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        time.sleep(0.1)


def launch_record(home, job_id):
    with open(os.path.join(home, "jobs", job_id, "job.json"), encoding="utf-8") as handle:
        return json.load(handle)["launch"]


def run(agents, folder):
    """The reboot tried on `agents`: {"agents": {agent: {"checks", "timings"}}}."""

    model = MarkedModel(folder)
    daemon = Daemon(folder)
    results = {agent: {"checks": [], "timings": {}} for agent in agents}
    jobs = []              # (agent, name, id, protocol)

    def check(agent, what, ok, detail=""):
        results[agent]["checks"].append((what, bool(ok), detail))
        if not ok:
            print(f"try-agents: reboot {agent} FAILED: {what} {detail}", file=sys.stderr, flush=True)
        return ok

    def row(job_id):
        try:
            return daemon.row(job_id) or {}
        except OSError:
            return {}

    try:
        profiles = {entry["name"]: entry for entry in daemon.call("profiles")["profiles"]}
        for agent in agents:
            bin_dir = os.path.join(os.environ.get("REALAGENTS_ROOT", "/tmp/realagents"), agent_worlds.PROGRAMS[agent])
            # One world for both: one home, one work folder.
            env, cwd = agent_worlds.world(agent, os.path.join(folder, f"reboot-{agent}"), model.port, "ready", bin_dir)
            protocol = bool(profiles[agent]["protocol"])
            for number in range(1, JOBS_EACH + 1):
                name = f"{agent}-{number}"
                job_id = daemon.call("dispatch", kind="shell", cwd=cwd, command=[], env=env, name=name,
                                     sessionFile="", origin="dispatch", profile=agent,
                                     task=f"echo: MARK-{name}")["id"]
                jobs.append((agent, name, job_id, protocol))
        for agent, name, job_id, protocol in jobs:
            with_tools = agent in agent_worlds.TURNS_OFFER_TOOLS
            asked = wait_quietly(lambda: (model.asked(f"MARK-{name}", with_tools) or {}).get("answered"), 120)
            check(agent, f"{name}: its first turn answered", asked)
            ready = wait_quietly(lambda: waiting(protocol)(row(job_id)), 60)
            check(agent, f"{name}: waiting after it", ready, str(row(job_id)))
        for agent, name, job_id, protocol in jobs:
            if agent in HISTORY:
                check(agent, f"{name}: its chat history in its own directory",
                      f"MARK-{name}" in _read(os.path.join(daemon.home, "jobs", job_id, HISTORY[agent])))
                continue
            session = wait_quietly(lambda: launch_record(daemon.home, job_id).get("sessionId"), 30)
            check(agent, f"{name}: its session id on record ({session})", session)
        sessions = {job_id: launch_record(daemon.home, job_id).get("sessionId") for _, _, job_id, _ in jobs}
        for agent in (agent for agent in agents if agent not in HISTORY):
            own = [sessions[job_id] for other, _, job_id, _ in jobs if other == agent]
            check(agent, "the two jobs' session ids differ", len(set(own)) == len(own) and all(own), str(own))
        pids = {job_id: row(job_id).get("pid") for _, _, job_id, _ in jobs}

        power_cut(daemon, [job_id for _, _, job_id, _ in jobs], job_processes)
        daemon = Daemon(folder)
        started = time.time()
        for agent, name, job_id, protocol in jobs:
            back = wait_quietly(lambda: (lambda current: current.get("pid") not in (None, pids[job_id])
                                         and waiting(protocol)(current) and time.time())(row(job_id)), 120)
            if check(agent, f"{name}: back after the power cut and waiting", back, str(row(job_id))):
                results[agent]["timings"].setdefault("daemon start to waiting again", []).append(
                    (back - started) * 1000)
            argv = _last_argv(daemon.home, job_id)
            if agent in HISTORY:
                check(agent, f"{name}: resumed from its own chat history",
                      os.path.join(daemon.home, "jobs", job_id, HISTORY[agent]) in argv, " ".join(argv))
            else:
                check(agent, f"{name}: resumed with its own session id", sessions[job_id] and sessions[job_id] in argv,
                      " ".join(argv))
        for agent, name, job_id, protocol in jobs:
            with_tools = agent in agent_worlds.TURNS_OFFER_TOOLS
            other = next(other for who, other, _, _ in jobs if who == agent and other != name)
            daemon.call("reply", id=job_id, text=f"echo: SECOND-{name}")
            asked = wait_quietly(lambda: model.asked(f"SECOND-{name}", with_tools), 120)
            if not check(agent, f"{name}: its second turn at the model", asked):
                continue
            markers = asked.get("markers") or []
            check(agent, f"{name}: the resumed request carries its own earlier turn (MARK-{name})",
                  f"MARK-{name}" in markers, str(markers))
            check(agent, f"{name}: ... and not the other job's (MARK-{other})", f"MARK-{other}" not in markers,
                  str(markers))
            done = wait_quietly(lambda: (model.asked(f"SECOND-{name}", with_tools) or {}).get("answered"), 120)
            check(agent, f"{name}: its second turn answered", done)
        for _, _, job_id, _ in jobs:
            try:
                daemon.call("stop", id=job_id)
            except Exception as error:       # the figures matter more than a stop's refusal
                print(f"try-agents: reboot: stop {job_id}: {error}", file=sys.stderr)
    finally:
        daemon.leave()
        model.process.kill()
    return {"agents": results, "at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}


def _read(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except OSError:
        return ""


def _last_argv(home, job_id):
    with open(os.path.join(home, "jobs", job_id, "job.json"), encoding="utf-8") as handle:
        return json.load(handle).get("lastArgv") or []


def wanted(names):
    """(whether the reboot is asked for, its agents) from try-agents' arguments:
    `reboot` alone or with agents, or every run (no arguments)."""
    if names and "reboot" not in names:
        return False, ()
    chosen = [name for name in names if name in AGENTS]
    return True, tuple(chosen) or DEFAULT


def report(figures):
    """Its lines in the `agents` section."""
    if not figures:
        return ""
    lines = ["", "A machine restart (`scripts/try-agents reboot`): two jobs of each agent in one folder and one "
             "home, a turn each with a marker of its own, kill -9 of the keeper, the daemon and every job at once, "
             "a new daemon; each job must come back waiting with its own session id and its second turn's "
             "request must carry its own earlier marker, not the other job's "
             f"({figures.get('at', '?')}; every agent's jobs in one daemon and one power cut, so the figures of "
             "one run share the 2 cores). Tried once with Codex's former resume, `codex resume --last`: "
             "codex-2's resumed request carried codex-1's marker and not its own, and codex-1 came back on an "
             "error screen (`r retry  f fork`), its second turn never sent.", ""]
    for agent, entry in figures["agents"].items():
        passed = sum(1 for check in entry["checks"] if check[1])
        back = entry["timings"].get("daemon start to waiting again") or []
        shown = " / ".join(f"{value:.0f}" for value in back) or "-"
        lines.append(f"- {agent}: {passed}/{len(entry['checks'])} checks passed; the new daemon's start to each "
                     f"job waiting again {shown} ms")
        lines += [f"  - {'ok' if check[1] else 'FAILED'}: {check[0]}" + (f" ({check[2]})" if check[2] and not
                                                                           check[1] else "")
                  for check in entry["checks"]]
    return "\n".join(lines)


def main(names):
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    _, agents = wanted(["reboot", *names])
    folder = run_folder("try-reboot-")
    started = time.monotonic()
    figures = run(agents, folder)
    from run import load_stored, record

    stored = (load_stored().get("agents") or {}).get("figures") or {"agents": {}}
    # The agents not tried this time keep their last outcomes.
    earlier = (stored.get("reboot") or {}).get("agents") or {}
    stored["reboot"] = dict(figures, agents={**earlier, **figures["agents"]})
    print(record("agents", stored, round(time.monotonic() - started)))
    failed = [check for entry in figures["agents"].values() for check in entry["checks"] if not check[1]]
    return 1 if failed else 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--model"]:
        serve_model(sys.argv[2], sys.argv[3])
    else:
        sys.exit(main(sys.argv[1:]))
