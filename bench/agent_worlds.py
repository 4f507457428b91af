"""Each real agent's offline world for scripts/try-agents: a home, its configuration
pointed at the fake model on 127.0.0.1, a work folder, and the environment a job of its
built-in profile gets (nothing of the caller's ANTHROPIC_*, OPENAI_*, CLAUDE*, CODEX_*,
PI_* or AIDER_*).

`world(agent, run, port, start)`: `start` is "ready" (every start-up question answered
in advance: the session's timings), "permission" (the same, for a task that makes the
agent ask before it runs a command: `PERMISSIONS`), or one of the agent's `STARTS` (a
start-up dialog left for the user). Returns (env, cwd).
"""

import json
import os
import subprocess

PINNED = {"claude": "2.1.197", "codex": "0.171.0", "aider": "0.86.2", "pi": "0.73.1"}
# Where the pinned install puts each program, under its root (REALAGENTS_ROOT).
PROGRAMS = {"claude": "claude/node_modules/.bin", "codex": "codex/node_modules/.bin",
            "aider": "aider-venv/bin", "pi": "pi/node_modules/.bin"}
# The start-up dialogs each agent shows, in order, and how the user answers each:
# ("keys", [...]) presses keys, ("reply", text) types an answer; None: it cannot go on
# offline past it (the session ends there).
STARTS = {
    "claude": {"trust-and-key": [("Quick safety check", ("keys", ["1"])),
                                 ("Do you want to use this API key?", ("keys", ["1"]))]},
    "codex": {"trust": [("Trust this folder?", ("keys", ["1", "Enter"]))],
              "sign-in": [("Choose how you want to use Codex.", None)]},
    "aider": {"no-git": [("No git repo found", ("reply", "y"))],
              "gitignore": [("Add .aider* to .gitignore", ("reply", "y"))],
              "openrouter": [("Login to OpenRouter", None)]},
    "pi": {},
}
# What makes each agent ask to run a command (the fake model's `run: CMD` answers with a
# call of the agent's shell tool; aider asks to run a fenced block, `shell: CMD`): the
# task, the file in the work folder the command makes (or, "removes", takes away: Codex
# runs a plain `touch` without asking), and the questions the agent asks, each with the
# user's answer. pi asks nothing: its tools just run.
PERMISSIONS = {
    "claude": ("run: touch junk.txt", ("makes", "junk.txt"), [("Do you want to proceed?", ("keys", ["1"]))]),
    "codex": ("run: rm -rf ./junk", ("removes", "junk"),
              [("Would you like to run the following command?", ("keys", ["y"]))]),
    "aider": ("shell: touch shell-ran-ok && echo shell-ran-ok", ("makes", "shell-ran-ok"),
              [("Run shell command?", ("reply", "y")), ("Add command output to the chat?", ("reply", "n"))]),
}
# The agents whose turn's request offers their tools: Claude Code and Codex also send the
# task in a request of its own for a title, which offers none (aider offers none at all).
TURNS_OFFER_TOOLS = ("claude", "codex", "pi")
_CLEARED = ("ANTHROPIC_", "OPENAI_", "CLAUDE", "CODEX_", "PI_", "AIDER_")
CLAUDE_KEY = "sk-ant-fake-0123456789abcdef"


def write(path, value):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(value if isinstance(value, str) else json.dumps(value))


def base_env(run, bin_dir):
    env = {name: value for name, value in os.environ.items() if not name.startswith(_CLEARED)}
    env.pop("ROOST_SOCKET", None)
    env.update({"HOME": f"{run}/home", "TMPDIR": f"{run}/tmp", "LANG": "C.UTF-8",
                "PATH": f"{bin_dir}:{env.get('PATH', '/usr/bin:/bin')}"})
    for part in ("home", "tmp", "work"):
        os.makedirs(f"{run}/{part}", exist_ok=True)
    return env


def git_init(folder, ignore=None):
    subprocess.run(["git", "init", "-q", folder], check=True)
    if ignore:
        write(os.path.join(folder, ".gitignore"), ignore)


def world(agent, run, port, start, bin_dir):
    env = base_env(run, bin_dir)
    work = f"{run}/work"
    home = env["HOME"]
    model = f"http://127.0.0.1:{port}"
    if agent == "claude":
        env.update({"ANTHROPIC_BASE_URL": model, "ANTHROPIC_API_KEY": CLAUDE_KEY, "DISABLE_AUTOUPDATER": "1",
                    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_TELEMETRY": "1",
                    "DISABLE_ERROR_REPORTING": "1"})
        settings = {"hasCompletedOnboarding": True}
        if start in ("ready", "permission"):
            settings["projects"] = {work: {"hasTrustDialogAccepted": True}}
            settings["customApiKeyResponses"] = {"approved": [CLAUDE_KEY[-20:]], "rejected": []}
        write(f"{home}/.claude.json", settings)
    elif agent == "codex":
        env.update({"CODEX_HOME": f"{home}/.codex", "FAKE_API_KEY": "x"})
        os.makedirs(env["CODEX_HOME"], exist_ok=True)
        if start != "sign-in":
            write(f"{home}/.codex/config.toml",
                  'model = "fake-model"\nmodel_provider = "fake"\ncheck_for_update_on_startup = false\n'
                  f'[model_providers.fake]\nname = "Fake LLM"\nbase_url = "{model}/v1"\n'
                  'env_key = "FAKE_API_KEY"\nwire_api = "responses"\n')
        if start == "trust":
            git_init(work)
        if start == "permission":
            os.makedirs(f"{work}/junk", exist_ok=True)
    elif agent == "aider":
        env.update({"LITELLM_LOCAL_MODEL_COST_MAP": "True", "AIDER_CHECK_UPDATE": "false",
                    "AIDER_SHOW_RELEASE_NOTES": "false", "AIDER_ANALYTICS_DISABLE": "true",
                    "AIDER_SHOW_MODEL_WARNINGS": "false", "AIDER_EDIT_FORMAT": "diff"})
        if start != "openrouter":
            env.update({"AIDER_MODEL": "openai/fake-model", "AIDER_OPENAI_API_BASE": f"{model}/v1",
                        "AIDER_OPENAI_API_KEY": "sk-fake"})
        write(f"{home}/.aider/caches/model_prices_and_context_window.json", {"openai/fake-model": {
            "max_input_tokens": 128000, "max_output_tokens": 4096, "input_cost_per_token": 0,
            "output_cost_per_token": 0, "litellm_provider": "openai", "mode": "chat"}})
        if start in ("ready", "permission", "openrouter"):
            git_init(work, ignore=".aider*\n")
        elif start == "gitignore":
            git_init(work)
    elif agent == "pi":
        agent_dir = f"{home}/.pi/agent"
        env.update({"PI_CODING_AGENT_DIR": agent_dir, "PI_OFFLINE": "1"})
        write(f"{agent_dir}/models.json", {"providers": {"fake": {
            "baseUrl": f"{model}/v1", "api": "openai-completions", "apiKey": "fake-key",
            "compat": {"supportsDeveloperRole": False, "supportsReasoningEffort": False},
            "models": [{"id": "fake-model", "name": "Fake Model", "contextWindow": 128000, "maxTokens": 4096}]}}})
        write(f"{agent_dir}/settings.json",
              {"defaultProvider": "fake", "defaultModel": "fake-model", "enableInstallTelemetry": False})
    return env, work
