"""`roost mcp`: an MCP server on stdio that an agent starts from its MCP configuration.

Running inside a job, it speaks for that job: each tool call is a connection of its own
to the daemon, `speak_for` with the job's id and token, then the op. Its tools are the
agent-to-agent ops and the task board (`tools.py`); the JSON-RPC 2.0 of MCP's stdio
transport, the handshake and the tool calls are `protocol.py`.

roost's own small server rather than the MCP SDK's, measured here: the SDK's low-level
server (with the 26 packages it pulls in: pydantic, anyio, starlette, ...) made the one-file
binary 14.7 MB -> 25.1 MB (31 -> 52 MB unpacked) and answered `initialize` 0.7 s after
its start; this one adds 15 KB and answers in 35 ms. The SDK's client tests it
(tests/test_mcp.py). Standard library only, like the rest of the CLI's path.
"""
