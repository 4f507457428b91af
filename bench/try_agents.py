"""scripts/try-agents: the built-in profiles on the real agents, offline, under roost.

Run by scripts/try-agents inside a network namespace with only loopback (it brings
`lo` up). It starts the fake model (bench/timed_model.py on ROOST_FAKE_LLM's
fake_llm.py) and a fresh roost daemon, then for each built-in profile:

- a session: dispatch with a task; the row working while the model thinks, waiting
  after the answer (which is on the agent's screen); a reply and its answer; stop,
  and no process of the job left. Timed: dispatch to the task at the model, the
  answer's end to the row saying waiting (aim: the profile's settleMs + 300 ms), the
  reply to the model getting it, stop to no process left.
- each start-up dialog it shows (bench/agent_worlds.STARTS) read on the row with its
  question and choices, left untouched (the row stays on it, nothing reaches the
  model) until the user answers it; then the task reaches the model.
- a task that makes it ask before it runs a command (bench/agent_worlds.PERMISSIONS):
  the question on the row with its choices, held there untouched (the row on it at
  every look, the command not run) until the user answers; then the command runs, its
  result reaches the model, and the row waits after the answer.

    python bench/try_agents.py [AGENT...]     # REALAGENTS_ROOT: the pinned agents
    python bench/try_agents.py limits [AGENT...]   # their usage limits (bench/try_limits.py)
    python bench/try_agents.py spend [AGENT...]    # what they spent, as roost reads it (bench/try_spend.py)

Its figures go to bench/results.json and RESULTS.md (bench/run.py's `record`).
"""

import os
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:0] = [HERE, ROOT]

import agent_worlds  # noqa: E402
from real_runs import Daemon, Model, job_processes, run_folder, wait_quietly, waiting, working  # noqa: E402

AGENTS = ("claude", "codex", "aider", "pi")
HOLD_S = 3.0          # a dialog is watched this long, untouched, before it is answered
SLACK_MS = 300        # the aim: waiting within settleMs + this after the answer's end
EARLY_S = 0.05        # a row this close before the answer's logged end has seen its last bytes


class Rows(threading.Thread):
    """Every change of one job's row, with when it was seen (polled every 10 ms)."""

    def __init__(self, daemon, job_id):
        super().__init__(daemon=True)
        self.daemon_, self.job_id, self.seen, self.running = daemon, job_id, [], True
        self.start()

    def run(self):
        last = None
        while self.running:
            try:
                row = self.daemon_.row(self.job_id)
            except OSError:        # the daemon is leaving
                return
            now = time.time()
            shown = None if row is None else {key: row.get(key) for key in
                                              ("state", "status", "waitingFor", "question", "choices", "summary")}
            if shown is not None:
                shown["reported"] = row.get("capabilities") is not None    # the agent's own word (the protocol)
            if shown is not None and (last is None or {k: v for k, v in shown.items() if k != "summary"} !=
                                      {k: v for k, v in last.items() if k != "summary"}):
                self.seen.append((now, shown))
            last = shown
            time.sleep(0.01)

    def now(self):
        return self.seen[-1][1] if self.seen else {}

    def first(self, test, after=0.0):
        for at, row in self.seen:
            if at >= after and test(row):
                return at
        return None

    def during(self, test, start, end):
        """`test` held for the row at some moment from `start` to `end`."""
        before = [row for at, row in self.seen if at <= start]
        if before and test(before[-1]):
            return True
        return any(test(row) for at, row in self.seen if start <= at <= end)

    def stop(self):
        self.running = False
        self.join(5)


class Session:
    """One job of a profile, with its checks (`check`) and timings (ms)."""

    def __init__(self, daemon, model, agent, profile, start, folder):
        self.daemon, self.model, self.agent, self.profile, self.start = daemon, model, agent, profile, start
        self.protocol = bool(profile.get("protocol"))
        self.with_tools = agent in agent_worlds.TURNS_OFFER_TOOLS
        bin_dir = os.path.join(os.environ.get("REALAGENTS_ROOT", "/tmp/realagents"), agent_worlds.PROGRAMS[agent])
        self.folder = os.path.join(folder, f"{agent}-{start}")
        env, cwd = agent_worlds.world(agent, self.folder, model.port, start, bin_dir)
        self.env, self.cwd, self.checks, self.timings = env, cwd, [], {}
        self.marker = f"task of {agent} {start}"
        if start == "permission":
            task = f"{self.marker}: {agent_worlds.PERMISSIONS[agent][0]}"
        else:
            task = f"delay=2 echo: {self.marker}"
        self.dispatched = time.time()
        self.id = daemon.call("dispatch", kind="shell", cwd=cwd, command=[], env=env, name=f"{agent}-{start}",
                              sessionFile="", origin="dispatch", profile=agent, task=task)["id"]
        self.rows = Rows(daemon, self.id)

    def check(self, what, ok, detail=""):
        self.checks.append((what, bool(ok), detail))
        if not ok:
            # What the agent showed then, to see why (beside the run's other files).
            shown = os.path.join(self.folder, f"failed-{len(self.checks)}.screen.txt")
            try:
                with open(shown, "w", encoding="utf-8") as handle:
                    handle.write(f"{what}\nrow: {self.rows.now()}\n\n{self.screen()}\n")
            except (OSError, RuntimeError):
                pass
            print(f"try-agents: {self.agent} ({self.start}) FAILED: {what} (its screen: {shown})",
                  file=sys.stderr, flush=True)
        return ok

    def screen(self):
        return self.daemon.call("peek", id=self.id)["text"]

    def turn(self, marker, sent_at, timing):
        """The model gets `marker`; the row works while it thinks, waits once its answer
        has ended (not before), and the answer is on the agent's screen."""
        asked = wait_quietly(lambda: self.model.turn(marker, self.with_tools), 60)
        if not self.check(f"{timing}: the model got it", asked):
            return False
        arrived = asked["t"]
        self.timings[timing] = (arrived - sent_at) * 1000
        answered = wait_quietly(lambda: self.model.turn(marker, self.with_tools)["answered"], 60)
        if not self.check("the model answered", answered):
            return False
        is_waiting = waiting(self.protocol)
        self.check("the row worked while the model thought", self.rows.during(working, arrived, answered))
        # The row may see the answer's last bytes a moment before the model's log says so.
        early = [row for at, row in self.rows.seen if arrived < at < answered - EARLY_S and is_waiting(row)]
        self.check("... and did not say waiting before the answer's end", not early, str(early[:1]))
        ready = wait_quietly(lambda: self.rows.first(is_waiting, max(self.last_working(arrived), answered - EARLY_S)),
                             30)
        if not self.check("the row waits after the answer", ready, str(self.rows.now())):
            return False
        self.timings.setdefault("answer end to waiting", []).append((ready - answered) * 1000)
        if self.protocol:
            self.check("... each of these rows the agent's own report (the protocol)",
                       all(row["reported"] for at, row in self.rows.seen if at >= arrived))
        shown = wait_quietly(lambda: f"ECHO: {marker}" in self.screen(), 15)
        return self.check("the answer is on the agent's screen", shown)

    def last_working(self, since):
        return max([at for at, row in self.rows.seen if at >= since and working(row)] or [since])

    def answer(self, kind, value, seen):
        """A dialog answered as its user would (keys, or a reply); when it was sent, once
        the row has let go of that dialog's question."""
        answered_at = time.time()
        if kind == "keys":
            self.daemon.call("keys", id=self.id, keys=value)
        else:
            self.daemon.call("reply", id=self.id, text=value)
        wait_quietly(lambda: self.rows.now().get("question") != seen.get("question"), 30)
        return answered_at

    def dialogs(self, steps):
        """Each start-up dialog read, held untouched, then answered as the user would;
        then the task reaches the model."""
        answered_at = self.dispatched
        for question, answer in steps:
            seen = wait_quietly(lambda: (lambda row: row.get("waitingFor") == "dialog"
                                         and question in (row.get("question") or "") and row)(self.rows.now()), 60)
            if not self.check(f"dialog {question!r} on the row", seen, str(self.rows.now())):
                return False
            self.check(f"... with its choices {seen.get('choices')}", seen.get("choices"))
            before = self.screen()
            held = hold(lambda: self.rows.now().get("waitingFor") == "dialog" and self.screen() == before
                        and not self.model.requests(self.marker), HOLD_S)
            if not self.check(f"... left untouched for {HOLD_S:.0f} s", held):
                return False
            if answer is None:
                return self.check("... answered only by the user (offline it goes no further)", True)
            kind, value = answer
            answered_at = self.answer(kind, value, seen)
        return self.turn(self.marker, answered_at, "last dialog answered to the task at the model")

    def permission(self, effect, steps):
        """The task makes the agent ask before it runs a command: each question read on
        the row with its choices and held untouched for HOLD_S (the row stays on the
        dialog at every look, the command does not run) until the user answers it; then
        the command runs, its result reaches the model (aider's does not: it runs the
        model's fenced block itself), and the row waits again."""
        asked = wait_quietly(lambda: self.model.turn(self.marker, self.with_tools), 60)
        if not self.check("dispatch to the task at the model: the model got it", asked):
            return False
        how, path = effect
        ran = (lambda: os.path.exists(os.path.join(self.cwd, path)) == (how == "makes"))
        answered_at = None
        for question, (kind, value) in steps:
            seen = wait_quietly(lambda: (lambda row: row.get("waitingFor") == "dialog"
                                         and question in (row.get("question") or "") and row)(self.rows.now()), 60)
            if not self.check(f"dialog {question!r} on the row", seen, str(self.rows.now())):
                return False
            self.check(f"... with its choices {seen.get('choices')}", seen.get("choices"))
            since, first = time.time(), answered_at is None
            held = hold(lambda: self.rows.now().get("question") == seen["question"]
                        and not (first and ran())
                        and not [r for r in self.model.requests(since=answered_at or asked["t"]) if r["toolResult"]],
                        HOLD_S)
            steady = all(row.get("waitingFor") == "dialog" for at, row in self.rows.seen if at >= since)
            untouched = "the command not run, " if first else ""
            if not self.check(f"... left untouched for {HOLD_S:.0f} s (the row on it throughout, {untouched}nothing "
                              "of it at the model)", held and steady, str(self.rows.seen[-3:])):
                return False
            answered_at = self.answer(kind, value, seen)
        if not self.check("the command ran once answered", wait_quietly(ran, 30)):
            return False
        is_waiting = waiting(self.protocol)
        if not self.with_tools:
            ready = wait_quietly(lambda: self.rows.first(is_waiting, answered_at), 30)
            return self.check("the row waits after it", ready, str(self.rows.now()))
        result = wait_quietly(lambda: next((r for r in self.model.requests(since=answered_at) if r["toolResult"]),
                                           None), 60)
        if not self.check("the command's result at the model", result):
            return False
        self.timings["the user's answer to the command's result at the model"] = (result["t"] - answered_at) * 1000
        ended = wait_quietly(lambda: next(r for r in self.model.requests(since=answered_at)
                                          if r["id"] == result["id"])["answered"], 60)
        if not self.check("the model answered it", ended):
            return False
        ready = wait_quietly(lambda: self.rows.first(is_waiting, max(self.last_working(result["t"]), ended - EARLY_S)),
                             30)
        if not self.check("the row waits after the answer", ready, str(self.rows.now())):
            return False
        self.timings.setdefault("answer end to waiting", []).append((ready - ended) * 1000)
        return self.check("the answer is on the agent's screen",
                          wait_quietly(lambda: "FAKE-REPLY-OK" in self.screen(), 15))

    def session(self):
        if not self.turn(self.marker, self.dispatched, "dispatch to the task at the model"):
            return
        reply = f"reply to {self.agent}"
        sent = time.time()
        self.daemon.call("reply", id=self.id, text=f"delay=1 echo: {reply}")
        self.turn(reply, sent, "reply to the model")

    def stop(self):
        started = time.time()
        self.daemon.call("stop", id=self.id)
        returned = time.time()
        gone = wait_quietly(lambda: not job_processes(self.id) and time.time(), 30)
        self.rows.stop()
        if self.check("no process of the job left after stop", gone):
            self.timings["stop to no process left"] = (gone - started) * 1000
            self.timings["stop op"] = (returned - started) * 1000


def hold(predicate, seconds):
    """`predicate` stays true at every look for `seconds`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not predicate():
            return False
        time.sleep(0.05)
    return True


def versions(bin_dir, agent):
    done = subprocess.run([os.path.join(bin_dir, agent), "--version"], capture_output=True, text=True, timeout=60)
    return (done.stdout + done.stderr).strip().splitlines()[-1] if (done.stdout + done.stderr).strip() else "?"


def main(names):
    if "reboot" in names:       # a machine restart under the real agents (bench/try_reboot.py)
        import try_reboot
        return try_reboot.main([name for name in names if name != "reboot"])
    if names[:1] == ["limits"]:
        import try_limits       # each agent at its usage limit, resumed at the reset
        return try_limits.main(names[1:])
    if names[:1] == ["spend"]:
        import try_spend        # what each agent spent, read by roost, against what was served
        return try_spend.main(names[1:])
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    chosen = [name for name in AGENTS if not names or name in names]
    folder = run_folder("try-agents-")
    model, daemon = Model(folder), Daemon(folder)
    started = time.monotonic()
    from run import load_stored
    # The agents not tried this time keep their last figures.
    figures = {"agents": dict(((load_stored().get("agents") or {}).get("figures") or {}).get("agents") or {})}
    figures["reboot"] = ((load_stored().get("agents") or {}).get("figures") or {}).get("reboot")
    try:
        built_in = {entry["name"]: entry for entry in daemon.call("profiles")["profiles"]}
        from roost.jobs import builtin_profiles
        profiles = builtin_profiles.profiles()
        for agent in chosen:
            root = os.environ.get("REALAGENTS_ROOT", "/tmp/realagents")
            entry = {"version": versions(os.path.join(root, agent_worlds.PROGRAMS[agent]), agent),
                     "settleMs": profiles[agent]["term"]["settleMs"], "protocol": bool(built_in[agent]["protocol"]),
                     "runs": [], "at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
            permission = ["permission"] if agent in agent_worlds.PERMISSIONS else []
            for start in ["ready", *permission, *agent_worlds.STARTS[agent]]:
                print(f"try-agents: {agent} ({start}) ...", file=sys.stderr, flush=True)
                session = Session(daemon, model, agent, profiles[agent], start, folder)
                try:
                    if start == "ready":
                        session.session()
                    elif start == "permission":
                        session.permission(*agent_worlds.PERMISSIONS[agent][1:])
                    else:
                        session.dialogs(agent_worlds.STARTS[agent][start])
                finally:
                    session.stop()
                entry["runs"].append({"start": start, "checks": session.checks, "timings": session.timings})
            figures["agents"][agent] = entry
    finally:
        daemon.leave()
        model.process.kill()
    from run import record
    text = record("agents", figures, round(time.monotonic() - started))
    print(text)
    failed = [check for agent in chosen for run in figures["agents"][agent]["runs"]
              for check in run["checks"] if not check[1]]
    return 1 if failed else 0


def report(figures):
    """The RESULTS.md section: timings per agent, then every check."""
    lines = ["| agent (version) | dispatch to the task at the model | answer's end to waiting (aim) "
             "| reply to the model | stop to no process left |", "|---|---:|---:|---:|---:|"]
    notes = []
    for agent, entry in figures["agents"].items():
        ready = next((run for run in entry["runs"] if run["start"] == "ready"), {"timings": {}})
        timing = ready["timings"]
        ends = timing.get("answer end to waiting") or []
        aim = entry["settleMs"] + SLACK_MS
        met = "met" if ends and max(ends) <= aim else "missed" if ends else "-"
        shown = " / ".join(f"{value:.0f}" for value in ends) or "-"
        lines.append(f"| {agent} ({entry['version']}) | {fmt(timing.get('dispatch to the task at the model'))} ms "
                     f"| {shown} ms ({aim} ms: {met}) | {fmt(timing.get('reply to the model'))} ms "
                     f"| {fmt(timing.get('stop to no process left'))} ms |")
        for run in entry["runs"]:
            passed = sum(1 for check in run["checks"] if check[1])
            failed = [f"{check[0]} ({check[2]})" if check[2] else check[0] for check in run["checks"] if not check[1]]
            timing = run["timings"]
            after = ""
            if timing.get("last dialog answered to the task at the model") is not None:
                after = (f"; the last dialog's answer to the task at the model "
                         f"{timing['last dialog answered to the task at the model']:.0f} ms")
            result = timing.get("the user's answer to the command's result at the model")
            if result is not None:
                after = f"; the user's answer to the command's result at the model {result:.0f} ms"
            if run["start"] != "ready" and timing.get("answer end to waiting"):
                after += f", the answer's end to waiting {timing['answer end to waiting'][-1]:.0f} ms"
            notes.append(f"- {agent}, {run['start']} ({entry.get('at', '?')}): {passed}/{len(run['checks'])} "
                         f"checks passed{after}"
                         + (f"; failed: {'; '.join(failed)}" if failed else ""))
            if run["start"] != "ready":
                notes += [f"  - {'ok' if check[1] else 'FAILED'}: {check[0]}" for check in run["checks"]]
    import try_reboot
    notes.append(try_reboot.report(figures.get("reboot")))
    return "\n".join(lines + [""] + notes + ["", (
        "Each agent at its pinned version, offline in a network namespace with only loopback, against the fake "
        "model; each job from its built-in profile (no profile of roost.json), in a jail of its own (roost.json's "
        "`sandbox.read` lets it see the agents' install under /tmp; its home and folder under /var/tmp). `ready`: a session with every start-up "
        "question answered in advance (task `delay=2 echo: ...`, then a reply `delay=1 echo: ...`); the task "
        "or reply at the model is the request of the agent's turn (the first with it that offers the agent's "
        "tools: Claude Code and Codex also send it in a request for a title), the answer's end that request's "
        "last byte, waiting is the row as `list` showed it (polled every "
        "10 ms; two figures: the task's answer, the reply's). The other runs start where the agent asks first: "
        "each dialog is read on the row, watched untouched for 3 s (the row stays on it, the screen does not "
        "change, nothing reaches the model), then answered as a user would (`roost keys ID 1`, `roost keys ID "
        "Enter`, `roost reply ID y`), or, where offline it cannot go on, left; then timed from the last answer "
        "to the task at the model. `permission`: the task makes the agent ask before it runs a command "
        "(Claude Code `touch`, Codex `rm -rf`, aider a fenced block; pi asks nothing): each question is "
        "held the same way, the row on it at every look and the command not run, then answered; the "
        "command's result then reaches the model (timed from the answer) and the row waits after its "
        "answer.")])


def fmt(value):
    return "-" if value is None else f"{value:.0f}"


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
