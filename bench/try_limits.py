"""scripts/try-agents limits: each real agent at its usage limit, read and resumed.

For each built-in profile: the fake model answers every request as the agent's provider
does at a limit (the status, headers and body the agent reads; `LIMITS`, and
tests/fixtures/agents/PROFILES.md), the reset a little ahead; a job of the profile is
given a task, and

- its row must read `blocked`, `waitingFor: "limit"` with the `resetsAt` the agent's
  screen names, in the agent's zone (`TZ`);
- the provider's limit ends (the fake answers again) and roost, at `resetsAt` (plus
  `limitResumeDelayMs`), types the profile's `limitResume` text once, by itself; the
  agent's resumed request reaches the model, the row waits after the answer, and the
  answer is on screen. A profile with no `limitResume` (aider, pi) is left alone: the
  row stays at the limit past the reset with nothing typed, then the user types
  `continue` (`roost reply --steer`: a plain reply to a row at its limit waits) and the
  agent answers.

Claude Code opens its own menu under the limit (`What do you want to do?`: `1. Stop and
wait for limit to reset`); roost answers it with that choice (the profile's `limitMenu`),
and only then is the screen the limit.

Run as `python bench/try_agents.py limits [AGENT...]` (scripts/try-agents limits); the
figures go to bench/results.json and the `limits` section of RESULTS.md.
"""

import json
import os
import re
import sys
import time

import agent_worlds
from real_runs import Daemon, Model, run_folder, wait_quietly

AGENTS = ("claude", "codex", "aider", "pi")
ZONE = "Europe/Berlin"
RESUME_DELAY_MS = 3000    # roost.json's limitResumeDelayMs for this run (default 30 s)
AHEAD_S = 30              # a clock-time reset: the next whole minute at least this far ahead
OAUTH = "sk-ant-oat01-fake-0123456789abcdef0123456789"
RATE_LIMIT = {"status": 429, "headers": {"x-ratelimit-limit-requests": "3", "x-ratelimit-remaining-requests": "0",
                                         "x-ratelimit-reset-requests": "20s"},
              "body": {"error": {"message": "Rate limit reached for fake-model in organization org-fake on requests "
                                            "per min (RPM): Limit 3, Used 3, Requested 1. Please try again in 20s.",
                                 "type": "requests", "param": None, "code": "rate_limit_exceeded"}}}


def claude_limit(reset):
    # A claude.ai login's limit (an API key's 429 is only "Request rejected (429)").
    return {"status": 429, "headers": {"anthropic-ratelimit-unified-status": "rejected",
                                       "anthropic-ratelimit-unified-reset": str(reset),
                                       "anthropic-ratelimit-unified-representative-claim": "five_hour"},
            "body": {"type": "error", "error": {"type": "rate_limit_error",
                                                "message": "This request would exceed your account's rate limit."}}}


def codex_limit(reset):
    return {"status": 429, "body": {"error": {"type": "usage_limit_reached", "plan_type": "plus",
                                              "message": "The usage limit has been reached", "resets_at": reset,
                                              "resets_in_seconds": reset - int(time.time())}}}


# agent: (the failure, given the reset's epoch seconds or None; the reset is a clock
# time the agent shows to the minute (True) or the provider's "try again in 20s").
LIMITS = {"claude": (claude_limit, True), "codex": (codex_limit, True),
          "aider": (lambda reset: RATE_LIMIT, False), "pi": (lambda reset: RATE_LIMIT, False)}


class Run:
    """One job of a profile taken to its limit and back, with its checks and figures."""

    def __init__(self, daemon, model, agent, profile, folder, fail_file):
        self.daemon, self.model, self.agent, self.profile = daemon, model, agent, profile
        self.fail_file, self.checks, self.figures = fail_file, [], {}
        bin_dir = os.path.join(os.environ.get("REALAGENTS_ROOT", "/tmp/realagents"), agent_worlds.PROGRAMS[agent])
        self.folder = os.path.join(folder, f"{agent}-limit")
        env, self.cwd = agent_worlds.world(agent, self.folder, model.port, "ready", bin_dir)
        env["TZ"] = ZONE
        if agent == "claude":
            env.pop("ANTHROPIC_API_KEY", None)
            env["CLAUDE_CODE_OAUTH_TOKEN"] = OAUTH
        self.env = env
        self.id = None

    def check(self, what, ok, detail=""):
        self.checks.append((what, bool(ok), detail))
        if not ok:
            print(f"try-agents limits: {self.agent} FAILED: {what} {detail}", file=sys.stderr, flush=True)
        return ok

    def fail(self, spec):
        with open(self.fail_file, "w", encoding="utf-8") as handle:
            handle.write(json.dumps(spec) if spec else "")

    def row(self):
        return self.daemon.row(self.id) or {}

    def screen(self):
        return self.daemon.call("peek", id=self.id)["text"]

    def continues(self, since):
        """The requests of the agent's turns (not Claude Code's or Codex's title
        requests, which offer no tools) whose last user text ends with the resume's
        `continue` on a row of its own, from `since`: Claude Code sends the failed task
        and `continue` as one user message, aider adds its rules after it."""
        offers_tools = self.agent in agent_worlds.TURNS_OFFER_TOOLS
        return [entry for entry in self.model.entries()
                if entry.get("asked") and entry["t"] >= since and (entry.get("tools") or not offers_tools)
                and re.search(r"(?m)^continue$", entry.get("user") or "")]

    def run(self):
        failure, clock = LIMITS[self.agent]
        reset = (int(time.time() + AHEAD_S) // 60 + 1) * 60 if clock else None
        self.fail(failure(reset))
        started = time.time()
        self.id = self.daemon.call("dispatch", kind="shell", cwd=self.cwd, command=[], env=self.env,
                                   name=f"{self.agent}-limit", sessionFile="", origin="dispatch", profile=self.agent,
                                   task=f"echo: limit task of {self.agent}")["id"]
        if self.agent == "claude":
            menu = wait_quietly(lambda: self.row().get("question") == "What do you want to do?", 90)
            if not self.check("claude's own menu under the limit read as a dialog", menu, str(self.row())):
                return
            # roost leaves it by the choice the profile names (limitMenu: 1. Stop and wait
            # for limit to reset), as a job whose limits it resumes.
        if self.profile.get("protocol"):
            limit = self.screen_at_limit()
            if limit is None:
                return
        else:
            limit = wait_quietly(lambda: (lambda row: row.get("waitingFor") == "limit" and row)(self.row()), 200)
            if not self.check("the row reads limit", limit, str(self.row())):
                return
        seen = time.time()
        self.figures["task to the row at its limit (s)"] = round(seen - started, 1)
        resets_at = limit.get("resetsAt")
        if clock:
            self.check(f"... resetsAt the reset the agent shows ({reset * 1000})", resets_at == reset * 1000,
                       str(resets_at))
        else:
            self.check("... resetsAt 20 s after the give-up (`try again in 20s`)",
                       resets_at is not None and seen * 1000 + 15_000 <= resets_at <= seen * 1000 + 21_000,
                       f"{resets_at} seen {seen * 1000:.0f}")
        if resets_at is None:
            return
        self.fail(None)     # the provider's limit is over at its reset
        self.figures["resetsAt to now at the limit (s)"] = round(resets_at / 1000 - seen, 1)
        if self.profile.get("limitResume"):
            self.resumed_by_roost(resets_at, seen)
        else:
            self.resumed_by_the_user(resets_at, seen)

    def screen_at_limit(self):
        """A protocol agent's row is its extension's report, not its screen's reading:
        the screen is read through the profile's `term` here (as of now, in its zone),
        and what the row said then is a check of its own."""
        from roost.term.reading import TermProfile
        term = TermProfile(self.profile["term"])
        reading = wait_quietly(lambda: (lambda found: found.get("waitingFor") == "limit" and found)(
            term.judge(self.screen().split("\n"), typed=True, seen_ms=int(time.time() * 1000), tz_name=ZONE)), 200)
        if not self.check("its screen, read through the profile's term, reads limit", reading):
            return None
        row = self.row()
        self.check("... and the row (its extension's report) reads limit", row.get("waitingFor") == "limit",
                   f"the row: {row.get('state')}/{row.get('status')}/{row.get('waitingFor')}, {row.get('summary')!r}")
        return reading

    def resumed_by_roost(self, resets_at, seen):
        due = resets_at / 1000 + RESUME_DELAY_MS / 1000
        early = wait_quietly(lambda: self.continues(seen) or time.time() > due - 0.5, due - time.time() + 5)
        self.check("nothing typed before the reset", early is True, str(early))
        asked = wait_quietly(lambda: self.continues(seen), due - time.time() + 60)
        if not self.check(f"roost typed {self.profile['limitResume']!r} at the reset: the model got it", asked):
            return
        self.figures["resetsAt + delay to the resumed request at the model (ms)"] = round(
            (asked[0]["t"] - due) * 1000)
        self.answered(asked[0]["t"])
        time.sleep(5)
        self.check("... once", len(self.continues(seen)) == 1, str(len(self.continues(seen))))

    def resumed_by_the_user(self, resets_at, seen):
        past = resets_at / 1000 + RESUME_DELAY_MS / 1000 + 5
        # A protocol agent's row is its own report (at its limit or not): only the typing counts.
        moved = (lambda: False) if self.profile.get("protocol") else (lambda: self.row().get("waitingFor") != "limit")
        held = wait_quietly(lambda: self.continues(seen) or moved() or (time.time() > past and "held"),
                       past - time.time() + 10)
        self.check("no limitResume in its profile: nothing typed at the reset"
                   + ("" if self.profile.get("protocol") else ", the row at its limit"), held == "held", str(held))
        sent = time.time()
        # A reply to a row at its limit waits until the agent works again; a steer is
        # typed at once, as a user typing it would.
        self.daemon.call("reply", id=self.id, text="continue", mode="steer")
        asked = wait_quietly(lambda: self.continues(sent), 60)
        if self.check("the user's `continue` (a steer) reached the model", asked):
            self.answered(asked[0]["t"])

    def answered(self, asked_at):
        back = wait_quietly(lambda: (lambda row: row.get("status") == "waiting" and row.get("waitingFor") == "question"
                                and row)(self.row()), 60)
        self.check("the row waits after the answer", back, str(self.row()))
        if back:
            self.figures["resumed request to the row waiting (ms)"] = round((time.time() - asked_at) * 1000)
        self.check("the answer is on the agent's screen",
                   wait_quietly(lambda: "FAKE-REPLY-OK" in self.screen() or "ECHO: " in self.screen(), 15))

    def stop(self):
        self.fail(None)
        if self.id is not None:
            self.daemon.call("stop", id=self.id)


def main(names):
    import subprocess
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    chosen = [name for name in AGENTS if not names or name in names]
    folder = run_folder("try-limits-")
    fail_file = os.path.join(folder, "fail.json")
    open(fail_file, "w").close()
    os.environ["FAKE_LLM_FAIL_FILE"] = fail_file      # read by the fake model on every request
    model, daemon = Model(folder), Daemon(folder)
    config_path = os.path.join(daemon.home, "roost.json")
    with open(config_path, encoding="utf-8") as handle:
        config = json.load(handle)         # the jails' read of the agents' install (real_runs.Daemon)
    with open(config_path, "w", encoding="utf-8") as handle:
        json.dump(dict(config, limitResumeDelayMs=RESUME_DELAY_MS), handle)
    started = time.monotonic()
    from run import load_stored, record
    figures = {"agents": dict(((load_stored().get("limits") or {}).get("figures") or {}).get("agents") or {})}
    try:
        from roost.jobs import builtin_profiles
        profiles = builtin_profiles.profiles()
        for agent in chosen:
            print(f"try-agents limits: {agent} ...", file=sys.stderr, flush=True)
            run = Run(daemon, model, agent, profiles[agent], folder, fail_file)
            try:
                run.run()
            finally:
                run.stop()
            figures["agents"][agent] = {"checks": run.checks, "figures": run.figures,
                                        "limitResume": profiles[agent].get("limitResume"),
                                        "at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    finally:
        daemon.leave()
        model.process.kill()
    print(record("limits", figures, round(time.monotonic() - started)))
    return 1 if any(not check[1] for agent in chosen for check in figures["agents"][agent]["checks"]) else 0


def report(figures):
    lines = ["| agent | limitResume | task to the row at its limit | resetsAt, from then "
             "| reset + delay to the resumed request | that request to the row waiting | checks |",
             "|---|---|---:|---:|---:|---:|---|"]
    notes = []
    for agent, entry in figures["agents"].items():
        shown = entry["figures"]
        passed = sum(1 for check in entry["checks"] if check[1])
        lines.append(f"| {agent} | {entry['limitResume'] or '-'} "
                     f"| {fmt(shown.get('task to the row at its limit (s)'), 's')} "
                     f"| {fmt(shown.get('resetsAt to now at the limit (s)'), 's')} "
                     f"| {fmt(shown.get('resetsAt + delay to the resumed request at the model (ms)'), 'ms')} "
                     f"| {fmt(shown.get('resumed request to the row waiting (ms)'), 'ms')} "
                     f"| {passed}/{len(entry['checks'])} |")
        notes.append(f"- {agent} ({entry['at']}):")
        notes += [f"  - {'ok' if check[1] else 'FAILED'}: {check[0]}" for check in entry["checks"]]
    return "\n".join(lines + [""] + notes + ["", (
        "Each agent at its pinned version, offline, as a job of its built-in profile with `TZ=Europe/Berlin`, "
        "against the fake model answering every request as the provider does at a limit: Claude Code a 429 with "
        "`anthropic-ratelimit-unified-status: rejected` and `-reset` (a claude.ai login), Codex a 429 "
        "`usage_limit_reached` with `resets_at`, both the next whole minute at least 30 s ahead; aider and pi "
        "OpenAI's 429 `rate_limit_exceeded` (`Please try again in 20s.`), which they retry by themselves, then "
        "give up. The limit answers stop once the row reads limit. roost.json's `limitResumeDelayMs` is "
        f"{RESUME_DELAY_MS} ms. \"resumed request\": the first request of a turn with `continue` on a row of its "
        "own in its last user text.")])


def fmt(value, unit):
    return "-" if value is None else f"{value} {unit}"
