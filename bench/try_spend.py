"""scripts/try-agents spend: what each real agent spent, read by roost, against what the
fake model served (issue 29 item 7).

For each built-in profile, in a loopback-only network namespace, the fake model answers
with usage figures it chooses (FAKE_LLM_USAGE, a list used in turn: different for each
response) and the quota headers each provider sends (FAKE_LLM_HEADERS); Claude Code's
answers come in several content blocks (FAKE_LLM_BLOCKS), as it writes one transcript
line per block. A job of the profile then takes several turns (a task, a tool call with
its permission answered, another turn), is stopped, resumed (its profile's resume) and
takes one more turn. Checked:

- the row's `spend.tokens` equals the sum of what the model served the job exactly
  (input counting the cache, as roost does); aider is run with --no-stream, the only way
  its answers carry usage (streamed, aider counts with its own tokenizer) and it gives
  no cache figures, so its truth has none;
- the plan windows `roost usage --windows` shows equal what the headers said (Claude
  Code signed in with CLAUDE_CODE_OAUTH_TOKEN, its status line read by roost's;
  Codex's token_count rate_limits);
- ccusage (npm, under /tmp, ROOST_CCUSAGE names its binary) on the same files, beside.

The files each agent wrote are copied to tests/fixtures/agents/<agent>/spend/, with
`truth.json` (the served figures and headers), and replayed by tests/test_spend_fixtures.py.
"""

import glob
import json
import os
import shutil
import subprocess
import sys
import time

import agent_worlds
from real_runs import Daemon, Model, run_folder, wait_quietly

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "agents")
AGENTS = ("claude", "codex", "aider", "pi")
FIXTURE_NAMES = {"claude": "claude-code", "codex": "codex", "aider": "aider", "pi": "pi"}
OAUTH = "sk-ant-oat01-fake-0123456789abcdef0123456789"
# Different figures for each response, so a response counted twice or missed shows.
USAGE = {
    "claude": [{"input": 120, "output": 41, "cacheRead": 3000, "cacheWrite": 250},
               {"input": 7, "output": 13, "cacheRead": 3310, "cacheWrite": 60},
               {"input": 15, "output": 77, "cacheRead": 3370, "cacheWrite": 0},
               {"input": 9, "output": 5, "cacheRead": 3370, "cacheWrite": 31}],
    "codex": [{"input": 900, "output": 40, "cacheRead": 2000, "cacheWrite": 0, "reasoning": 11},
              {"input": 33, "output": 19, "cacheRead": 2900, "cacheWrite": 0},
              {"input": 51, "output": 8, "cacheRead": 2950, "cacheWrite": 0, "reasoning": 3}],
    "pi": [{"input": 310, "output": 22, "cacheRead": 1500, "cacheWrite": 0},
           {"input": 12, "output": 9, "cacheRead": 1800, "cacheWrite": 0}],
    "aider": [{"input": 640, "output": 35, "cacheRead": 0, "cacheWrite": 0},
              {"input": 702, "output": 18, "cacheRead": 0, "cacheWrite": 0}],
}
HEADERS = {
    "claude": {"request-id": "req_{uuid}", "anthropic-ratelimit-unified-status": "allowed",
               "anthropic-ratelimit-unified-reset": "{now+7200}",
               "anthropic-ratelimit-unified-representative-claim": "five_hour",
               "anthropic-ratelimit-unified-5h-utilization": "0.25", "anthropic-ratelimit-unified-5h-reset": "{now+7200}",
               "anthropic-ratelimit-unified-7d-utilization": "0.5", "anthropic-ratelimit-unified-7d-reset": "{now+302400}"},
    "codex": {"x-codex-primary-used-percent": "25", "x-codex-primary-window-minutes": "300",
              "x-codex-primary-reset-at": "{now+7200}", "x-codex-secondary-used-percent": "50",
              "x-codex-secondary-window-minutes": "10080", "x-codex-secondary-reset-at": "{now+302400}"},
}
EXPECTED_WINDOWS = {"claude": ("anthropic", {"5h": 25.0, "7d": 50.0}), "codex": ("openai", {"5h": 25.0, "7d": 50.0})}


def served(entries, since, until, turns_only=False):
    """[input (cache included), output, cacheRead, cacheWrite] the model served between
    `since` and `until`, and how many answers carried usage. `turns_only`: the requests
    of the conversation, those that offer the agent's tools (Claude Code's and Codex's
    side requests, a session's title, offer none, and they write those nowhere)."""
    total, answers = [0, 0, 0, 0], 0
    for entry in entries:
        usage = entry.get("usage")
        if not isinstance(usage, dict) or not since <= entry.get("t", 0) <= until:
            continue
        if turns_only and not entry.get("tools"):
            continue
        answers += 1
        total = [a + b for a, b in zip(total, [usage["input"] + usage["cacheRead"] + usage["cacheWrite"],
                                               usage["output"], usage["cacheRead"], usage["cacheWrite"]])]
    return total, answers


class Run:
    def __init__(self, daemon, model, agent, folder, settings):
        self.daemon, self.model, self.agent, self.settings = daemon, model, agent, settings
        self.checks, self.figures, self.id = [], {}, None
        bin_dir = os.path.join(os.environ.get("REALAGENTS_ROOT", "/tmp/realagents"), agent_worlds.PROGRAMS[agent])
        self.folder = os.path.join(folder, f"{agent}-spend")
        env, self.cwd = agent_worlds.world(agent, self.folder, model.port, "ready", bin_dir)
        if agent == "claude":
            env.pop("ANTHROPIC_API_KEY", None)
            env["CLAUDE_CODE_OAUTH_TOKEN"] = OAUTH        # a claude.ai login: its status line has the windows
        if agent == "aider":
            env["AIDER_STREAM"] = "false"                 # answers that carry usage (see the docstring)
        self.env = env

    def check(self, what, ok, detail=""):
        self.checks.append((what, bool(ok), detail))
        if not ok:
            print(f"try-agents spend: {self.agent} FAILED: {what} {detail}", file=sys.stderr, flush=True)
        return ok

    def row(self):
        return self.daemon.row(self.id) or {}

    def screen(self):
        return self.daemon.call("peek", id=self.id)["text"]

    def settle(self, marker, timeout=90):
        """Answer the permission questions of the turn as its user would, until the row
        waits for text with `marker`'s answer on the screen."""
        answers = (agent_worlds.PERMISSIONS.get(self.agent) or (None, None, []))[2]
        deadline = time.time() + timeout
        while time.time() < deadline:
            row = self.row()
            asked = row.get("question") or ""
            if row.get("status") == "waiting" and asked:
                for question, (kind, value) in answers:
                    if question in asked:
                        if kind == "keys":
                            self.daemon.call("keys", id=self.id, keys=value)
                        else:
                            self.daemon.call("reply", id=self.id, text=value)
                        # once: until the row lets go of that question
                        wait_quietly(lambda: (self.row().get("question") or "") != asked, 30)
                        break
            if row.get("status") == "waiting" and row.get("waitingFor") in ("question", "first-prompt") \
                    and (marker is None or marker in self.screen()):
                return True
            time.sleep(0.2)
        return False

    def turn(self, text, marker):
        self.daemon.call("reply", id=self.id, text=text)
        time.sleep(0.5)
        done = self.settle(marker, 30)
        if not done and any(text in line for line in self.screen().splitlines()[-8:]):
            # Left on the input line unsubmitted (seen with Codex 0.171 now and then, not a
            # matter of spend): its user presses Enter again; counted in the figures.
            self.figures["enters pressed again"] = self.figures.get("enters pressed again", 0) + 1
            self.daemon.call("keys", id=self.id, keys=["Enter"])
            done = self.settle(marker, 60)
        return self.check(f"the turn {text!r} answered", done, "" if done else repr(self.screen()[-600:]))

    def run(self):
        agent = self.agent
        started = time.time()
        self.id = self.daemon.call("dispatch", kind="shell", cwd=self.cwd, command=[], env=self.env,
                                   name=f"{agent}-spend", sessionFile="", origin="dispatch", profile=agent,
                                   task=f"echo: first turn of {agent}")["id"]
        self.check("the task answered", self.settle(f"ECHO: first turn of {agent}", 120))
        tool = {"claude": "run: touch spent.txt", "codex": "run: rm -rf ./junk", "pi": "run: touch spent.txt",
                "aider": "shell: touch spent.txt && echo spent-ok"}[agent]
        if agent == "codex":
            os.makedirs(os.path.join(self.cwd, "junk"), exist_ok=True)
        self.turn(tool, None)
        self.turn(f"echo: third turn of {agent}", f"ECHO: third turn of {agent}")
        self.daemon.call("stop", id=self.id)
        self.daemon.call("respawn", id=self.id)
        self.check("resumed", self.settle(None, 120))
        self.turn(f"echo: after the resume of {agent}", f"ECHO: after the resume of {agent}")
        wait_quietly(lambda: self._caught_up(started), 20)
        self.compare(started)

    def _caught_up(self, started):
        truth, _ = served(self.model.entries(), started, time.time(), self.agent != "aider")
        return (self.row().get("spend") or {}).get("tokens", {}).get("output") == truth[1]

    def compare(self, started):
        ended = time.time()
        everything, _ = served(self.model.entries(), started, ended)
        truth, answers = served(self.model.entries(), started, ended, self.agent != "aider")
        spend = self.row().get("spend") or {}
        got = [spend.get("tokens", {}).get(field) for field in ("input", "output", "cacheRead", "cacheWrite")]
        self.figures.update({"served": truth, "answers": answers, "roost": got, "models": spend.get("models"),
                             "servedWithSideRequests": everything,
                             "usd": spend.get("usd"), "unpriced": spend.get("unpriced")})
        expected = truth if self.agent != "aider" else [truth[0], truth[1], 0, 0]
        self.check("roost's tokens are exactly what the model served the conversation", got == expected,
                   f"{got} != {expected}")
        if self.agent in EXPECTED_WINDOWS:
            provider, windows = EXPECTED_WINDOWS[self.agent]
            read = {entry["window"]: entry["usedPercent"] for entry in self.daemon.call("windows")["windows"]
                    if entry["provider"] == provider}
            self.figures["windows"] = read
            self.check("the windows read are the headers'", read == windows, f"{read} != {windows}")
        self.figures["ccusage"] = ccusage(self.agent, self.env, self.files())
        self.record(truth)

    def files(self):
        home = self.env["HOME"]
        if self.agent == "claude":
            return glob.glob(f"{home}/.claude/projects/*/*.jsonl") + glob.glob(f"{home}/.claude/projects/*/*/subagents/*.jsonl")
        if self.agent == "codex":
            return glob.glob(f"{home}/.codex/sessions/*/*/*/rollout-*.jsonl")
        if self.agent == "pi":
            return glob.glob(os.path.join(self.daemon.home, "jobs", self.id, "pi-sessions", "*.jsonl"))
        return glob.glob(os.path.join(self.daemon.home, "jobs", self.id, "aider.analytics.jsonl"))

    def record(self, truth):
        """The agent's files and what was served, for the suite to replay."""
        version = agent_worlds.PINNED[self.agent]
        target = os.path.join(FIXTURES, FIXTURE_NAMES[self.agent], version, "spend")
        shutil.rmtree(target, ignore_errors=True)
        os.makedirs(target)
        names = []
        for index, path in enumerate(sorted(self.files(), key=os.path.getmtime)):
            name = f"{index + 1}-{os.path.basename(path)}"
            shutil.copy(path, os.path.join(target, name))
            names.append(name)
        with open(os.path.join(target, "truth.json"), "w", encoding="utf-8") as handle:
            json.dump({"agent": self.agent, "version": version, "files": names, "served": truth,
                       "servedWithSideRequests": self.figures.get("servedWithSideRequests"),
                       "tokens": dict(zip(("input", "output", "cacheRead", "cacheWrite"), truth)),
                       "usage": USAGE[self.agent], "headers": HEADERS.get(self.agent),
                       "windows": (EXPECTED_WINDOWS.get(self.agent) or (None, None))[1],
                       "note": "served: what fake_llm served the job (input counts the cache, as roost does); "
                               "aider gives no cache figures"}, handle, indent=1)
            handle.write("\n")


def ccusage(agent, env, files):
    """ccusage's figures for the same files: {input (its fresh input), output, cacheRead,
    cacheWrite, cost}, or why there are none. pi's files (in the job's own session
    directory) are shown to it where it looks, a copy in pi's default sessions folder."""
    program = os.environ.get("ROOST_CCUSAGE") or "/tmp/ccusage/node_modules/.bin/ccusage"
    command = {"claude": "claude", "codex": "codex", "pi": "pi"}.get(agent)
    if command is None or not os.path.exists(program):
        return {"none": "ccusage reads no aider records" if command is None else "ccusage is not installed"}
    home = env["HOME"]
    extra = {"claude": {"CLAUDE_CONFIG_DIR": f"{home}/.claude"}, "codex": {"CODEX_HOME": f"{home}/.codex"},
             "pi": {"PI_CODING_AGENT_DIR": f"{home}/.pi/agent"}}[agent]
    if agent == "pi":
        shown = f"{home}/.pi/agent/sessions/--roost-job--"
        os.makedirs(shown, exist_ok=True)
        for path in files:
            shutil.copy(path, shown)
    done = subprocess.run([program, command, "daily", "--json", "--offline"], capture_output=True, text=True,
                          env={**os.environ, "HOME": home, **extra}, timeout=120)
    try:
        totals = json.loads(done.stdout)["totals"]
    except (ValueError, KeyError):
        return {"none": (done.stderr or done.stdout)[-300:]}
    return {"input": totals.get("inputTokens"), "output": totals.get("outputTokens"),
            "cacheRead": totals.get("cacheReadTokens"), "cacheWrite": totals.get("cacheCreationTokens"),
            "cost": totals.get("totalCost", totals.get("costUSD"))}


def main(names):
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    chosen = [name for name in AGENTS if not names or name in names]
    folder = run_folder("try-spend-")      # under /var/tmp: a jail's /tmp is its own
    usage_file, headers_file = os.path.join(folder, "usage.json"), os.path.join(folder, "headers.json")
    for path in (usage_file, headers_file):
        open(path, "w").close()
    os.environ.update({"FAKE_LLM_USAGE": usage_file, "FAKE_LLM_HEADERS": headers_file, "FAKE_LLM_BLOCKS": "3"})
    model, daemon = Model(folder), Daemon(folder)
    started = time.monotonic()
    from run import load_stored, record
    figures = {"agents": dict(((load_stored().get("agents_spend") or {}).get("figures") or {}).get("agents") or {})}
    try:
        for agent in chosen:
            print(f"try-agents spend: {agent} ...", file=sys.stderr, flush=True)
            with open(usage_file, "w") as handle:
                json.dump(USAGE[agent], handle)
            with open(headers_file, "w") as handle:
                json.dump(HEADERS.get(agent, {"request-id": "req_{uuid}"}), handle)
            run = Run(daemon, model, agent, folder, None)
            try:
                run.run()
            except Exception as error:
                run.check("the run went through", False, repr(error))
            finally:
                if run.id is not None:
                    try:
                        daemon.call("stop", id=run.id)
                    except Exception:
                        pass
            figures["agents"][agent] = {"checks": run.checks, "figures": run.figures,
                                        "at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    finally:
        daemon.leave()
        model.process.kill()
    print(record("agents_spend", figures, round(time.monotonic() - started)))
    return 1 if any(not check[1] for agent in chosen for check in figures["agents"][agent]["checks"]) else 0


def report(figures):
    lines = ["| agent | served by the model in the conversation (input, output, cache read, cache write) | "
             "with its side requests | roost's row | ccusage on the same files (fresh input, output, cache read, "
             "cache write) | windows read | checks |",
             "|---|---|---|---|---|---|---|"]
    for agent, entry in figures["agents"].items():
        shown = entry["figures"]
        cc = shown.get("ccusage") or {}
        cc_text = cc.get("none") or ", ".join(str(cc.get(key)) for key in ("input", "output", "cacheRead", "cacheWrite"))
        passed = sum(1 for check in entry["checks"] if check[1])
        failed = [check[0] for check in entry["checks"] if not check[1]]
        lines.append(f"| {agent} | {shown.get('served')} ({shown.get('answers')} answers) | "
                     f"{shown.get('servedWithSideRequests')} | {shown.get('roost')} | "
                     f"{cc_text} | {shown.get('windows') or '—'} | {passed}/{len(entry['checks'])}"
                     + (f": failed {'; '.join(failed)}" if failed else "") + " |")
    return ("\n".join(lines) + "\n\nroost's input counts the cache (reads and writes), as its `spend` does; "
            "ccusage's input is the fresh input alone. Each agent: a task, a tool call with its permission "
            "answered, another turn, a stop and a resume, one more turn. The conversation is the requests "
            "that offer the agent's tools (aider offers none: all of its); the side requests (a session's "
            "title, Claude Code's and Codex's) are written in no file of the agent's, so no reader of "
            "its files sees them.")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
