"""`roost mcp` driven by the MCP SDK's own client."""

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from conftest import PYTHON, ROOT


def server(env):
    return StdioServerParameters(command=PYTHON, args=["-m", "roost", "mcp"], env=env, cwd=ROOT)


def with_client(env, steps):
    """Run `steps(client)` (async) on an SDK client of `roost mcp` in `env`; its result."""
    async def session():
        async with Client(server(env), read_timeout_seconds=30) as client:
            return await steps(client)
    return anyio.run(session)


def text_of(result):
    [content] = result.content
    return content.text
