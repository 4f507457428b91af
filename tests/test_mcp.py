"""`roost mcp`, the MCP server an agent starts from its MCP configuration, driven by the
MCP SDK's own client: run as a subprocess in a real job's environment against a real
daemon, it answers `initialize`, lists its tools, and a `roost_send` reaches a real peer;
the daemon's refusals and a lost daemon are tool errors; outside a job `initialize` is
refused. Then the wire itself, line by line: only protocol messages on stdout."""

import json
import os
import subprocess
import tomllib

from mcp.shared.exceptions import MCPError
import pytest

from conftest import PYTHON, ROOT, wait_for
from jobkit import dispatch, row, wait_state
from mcpkit import text_of, with_client
from peerkit import items_agent, messages
from roost import mcp_config
from roost.mcp_config import mcp_args
from roost.mcp_server.tools import tools_for

TOOLS = {"roost_peers", "roost_send", "roost_watch", "roost_tasks", "roost_claim", "roost_done"}


def job_environ(daemon, job_id):
    """The environment the job's own process runs with (as an agent it runs would pass on
    to the servers it starts)."""
    pid = wait_for(lambda: row(daemon, job_id)["pid"], what="the job's pid")
    with open(f"/proc/{pid}/environ", "rb") as handle:
        pairs = handle.read().decode("utf-8", "surrogateescape").split("\0")
    return dict(pair.split("=", 1) for pair in pairs if "=" in pair)


def test_the_sdk_client_lists_the_tools_and_a_send_reaches_a_real_peer(daemon):
    reviewer = items_agent(daemon, "reviewer")
    implementer = dispatch(daemon, ["sleep", "300"], name="implementer")

    async def steps(client):
        info = (client.protocol_version, client.server_info, client.server_capabilities, client.instructions)
        tools = (await client.list_tools()).tools
        peers = await client.call_tool("roost_peers", {})
        sent = await client.call_tool("roost_send", {"to": "reviewer", "message": "the patch is ready"})
        watched = await client.call_tool("roost_watch", {"id": "reviewer", "when": "ended"})
        return info, tools, peers, sent, watched

    info, tools, peers, sent, watched = with_client(job_environ(daemon, implementer), steps)
    version, server_info, capabilities, instructions = info
    assert version == "2025-11-25" and server_info.name == "roost" and capabilities.tools is not None
    assert "not from your user" in instructions
    assert {tool.name for tool in tools} == TOOLS
    for tool in tools:
        assert tool.description and tool.input_schema["type"] == "object"
    described = {tool.name: tool.description for tool in tools}
    assert "not from its user" in described["roost_send"] and "not from your user" in described["roost_send"]
    assert not peers.is_error and '"name": "reviewer"' in text_of(peers)
    assert not sent.is_error and text_of(sent).startswith("Delivered to reviewer.")
    assert not watched.is_error and text_of(watched).startswith("Watching reviewer")
    [message] = wait_for(lambda: messages(reviewer), what="the message at the peer")
    assert message["from"] == "implementer" and message["text"].endswith("the patch is ready")
    assert "not from the user" in message["text"]


def test_refusals_are_tool_errors_naming_the_code(daemon):
    implementer = dispatch(daemon, ["sleep", "300"], name="implementer")
    ended = dispatch(daemon, ["sh", "-c", "read line"], name="ended")
    ended_env = job_environ(daemon, ended)
    daemon.call("stop", id=ended)
    wait_state(daemon, ended, "stopped")

    async def steps(client):
        return [await client.call_tool(name, args) for name, args in (
            ("roost_send", {"to": "nobody", "message": "hello"}),
            ("roost_send", {"to": "implementer"}),
            ("roost_tasks", {}),
            ("roost_claim", {"id": 999999}),
            ("roost_done", {"id": 999999, "result": "done"}))]

    unknown, incomplete, *board = with_client(job_environ(daemon, implementer), steps)
    assert unknown.is_error and "(not_found)" in text_of(unknown)
    assert incomplete.is_error and "(bad_request)" in text_of(incomplete)
    # The board refuses as unsupported until this roost has one; then the task is not found.
    for result in board[1:] + ([] if "tasks" in text_of(board[0]) else board[:1]):
        assert result.is_error and ("(unsupported)" in text_of(result) or "(not_found)" in text_of(result))

    async def peers(client):
        return await client.call_tool("roost_peers", {})

    refused = with_client(ended_env, peers)      # a job that ended speaks for no one
    assert refused.is_error and "(unauthorized)" in text_of(refused)


def test_a_lost_daemon_is_a_tool_error_and_outside_a_job_initialize_is_refused(daemon):
    env = job_environ(daemon, dispatch(daemon, ["sleep", "300"], name="implementer"))
    daemon.stop()                                 # its jobs live on under the keeper
    lost = with_client(env, lambda client: client.call_tool("roost_peers", {}))
    assert lost.is_error and "unreachable" in text_of(lost)

    outside = {name: value for name, value in env.items() if not name.startswith(("ROOST_JOB", "PI_JOB"))}
    with pytest.raises(BaseException) as refused:
        with_client(outside, lambda client: client.list_tools())
    [error] = [error for error in leaves(refused.value) if isinstance(error, MCPError)]
    assert "acts for the roost job it runs in" in error.error.message


def leaves(error):
    """The exceptions inside anyio's exception groups."""
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in leaves(inner)]
    return [error]


def rpc(lines, env):
    """`roost mcp` fed these lines; every line it wrote on stdout, parsed."""
    done = subprocess.run([PYTHON, "-m", "roost", "mcp"], input="".join(line + "\n" for line in lines).encode(),
                          capture_output=True, env=env, cwd=ROOT, timeout=30)
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.decode().splitlines()]


def request(request_id, method, params=None):
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, **({"params": params} if params else {})})


def test_the_wire_answers_each_request_and_nothing_else():
    env = {**os.environ, "PYTHONPATH": ROOT, "ROOST_JOB_ID": "j1", "ROOST_JOB_TOKEN": "t",
           "ROOST_SOCKET": "/nonexistent/roost.sock"}
    answers = rpc([
        request(1, "server/discover"),                   # a newer client's probe: it falls back
        request(2, "tools/list"),                        # before initialize
        request(3, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                  "clientInfo": {"name": "t", "version": "1"}}),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        request(4, "ping"),
        request(5, "tools/call", {"name": "roost_nothing", "arguments": {}}),
        "[" + request(6, "ping") + "," + json.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled"}) + "]",
        "not json",
        request(7, "initialize", {"protocolVersion": "1999-01-01"}),
    ], env)
    by_id = {answer.get("id"): answer for answer in answers if isinstance(answer, dict)}
    assert by_id[1]["error"]["code"] == -32601 and by_id[2]["error"]["code"] == -32600
    assert by_id[3]["result"]["protocolVersion"] == "2025-06-18"
    assert by_id[4]["result"] == {} and by_id[5]["error"]["code"] == -32602
    assert [answer for answer in answers if isinstance(answer, list)] == [[{"jsonrpc": "2.0", "id": 6, "result": {}}]]
    assert by_id[None]["error"]["code"] == -32700
    assert by_id[7]["result"]["protocolVersion"] == "2025-11-25"     # not ours: our newest
    assert len(answers) == 9 - 1                  # one a line, none for the notification


def test_each_agent_is_told_how_to_start_it():
    """The words each agent gets (verified on Claude Code 2.1.197 and Codex 0.171.0, which
    started the server, offered its tools to their model and ran a roost_send for it)."""
    claude = mcp_args("claude", ["/opt/roost é/roost"])
    assert [word.split("=", 1)[0] for word in claude] == ["--mcp-config", "--allowedTools"]
    config = json.loads(claude[0].split("=", 1)[1])
    assert config == {"mcpServers": {"roost": {"type": "stdio", "command": "/opt/roost é/roost", "args": ["mcp"]}}}
    assert claude[1].split("=", 1)[1].split(",") == [f"mcp__roost__{name}" for name in mcp_config.TOOLS]

    codex = mcp_args("codex", ["python3", "-m", "roost"])
    assert codex[::2] == ["-c"] * 4
    settings = tomllib.loads("\n".join(codex[1::2]))["mcp_servers"]["roost"]
    assert settings == {"command": "python3", "args": ["-m", "roost", "mcp"],
                        "env_vars": ["ROOST_JOB_ID", "ROOST_JOB_TOKEN", "ROOST_SOCKET", "PYTHONPATH"],
                        "default_tools_approval_mode": "approve"}
    assert mcp_args("pi", ["roost"]) == [] and mcp_args("aider", ["roost"]) == []


def test_the_tools_the_agents_allow_are_the_tools_it_offers():
    assert [tool.name for tool in tools_for()] == list(mcp_config.TOOLS)
