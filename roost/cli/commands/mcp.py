"""An MCP server on stdio for the agent this runs under: an agent starts it from its MCP
configuration, and inside a roost job it speaks for that job. Its tools: roost_peers,
roost_send, roost_watch, roost_tasks, roost_claim, roost_done. Outside a job it refuses
the client's `initialize`, saying why. It writes nothing to stdout but the protocol's
messages; the README's "MCP tools" says how each agent is configured to start it.

Usage:
  roost mcp
  roost mcp --help
"""


def main(opts, ctx):
    from roost.mcp_server.protocol import serve

    return serve(ctx.env)
