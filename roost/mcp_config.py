"""How each agent is told to start `roost mcp`, roost's MCP server (the README's "MCP
tools"): the words to add to its command line. Standard library only: the built-in
profiles (the daemon's) and the CLI may both use it.

`mcp_args(agent, roost_argv)` gives them for the agents that take MCP servers ("claude",
"codex"), and [] for the others: pi has no MCP (it speaks roost's protocol through its
extension), nor has aider. `roost_argv` is how this roost is run, from any directory
(`roost.bundle.userenv.roost_command()`: the binary, or `python -m roost`). No file is
written: both agents take the server on their command line. Add the words to an agent's
command and to its `resume`, before the task.
"""

import json

SERVER = "roost"
# What the server needs of the job's environment. Codex starts its MCP servers with a
# cleaned environment and passes on only what it is told to (PYTHONPATH for a roost run
# from a checkout); Claude Code passes on its own.
JOB_ENVIRONMENT = ("ROOST_JOB_ID", "ROOST_JOB_TOKEN", "ROOST_SOCKET", "PYTHONPATH")
# The tools `roost mcp` offers (roost.mcp_server.tools). They reach only roost's own
# sessions and its board, so the agent may use them without asking its user each time.
TOOLS = ("roost_peers", "roost_send", "roost_watch", "roost_tasks", "roost_claim", "roost_done")


def _compact(value):
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _claude(command, args, env):
    # --mcp-config and --allowedTools each take several values when given apart; in the
    # `=` form each takes just its own, so the task after them stays the task.
    server = {"type": "stdio", "command": command, "args": args}
    if env:
        server["env"] = dict(env)
    config = {"mcpServers": {SERVER: server}}
    allowed = ",".join(f"mcp__{SERVER}__{tool}" for tool in TOOLS)
    return ["--mcp-config=" + _compact(config), "--allowedTools=" + allowed]


def _codex(command, args, env):
    # -c takes a dotted key and a TOML value; a JSON string or list is one, and so is
    # each variable of `env` given as its own key.
    settings = {"command": command, "args": args, "env_vars": list(JOB_ENVIRONMENT),
                "default_tools_approval_mode": "approve"}
    settings.update({f"env.{name}": value for name, value in (env or {}).items()})
    return [word for key, value in settings.items() for word in ("-c", f"mcp_servers.{SERVER}.{key}={_compact(value)}")]


AGENTS = {"claude": _claude, "codex": _codex}


def mcp_args(agent, roost_argv, env=None):
    """The words that give `agent` roost's MCP server, to add before its task; `env`:
    variables the server needs besides the job's own (where a checkout's roost is)."""
    add = AGENTS.get(agent)
    if add is None:
        return []
    return add(roost_argv[0], list(roost_argv[1:]) + ["mcp"], env)
