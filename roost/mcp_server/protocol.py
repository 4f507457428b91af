"""MCP over stdio, the part roost needs: JSON-RPC 2.0, one message a line (MCP's stdio
transport), the `initialize` handshake, `ping`, `tools/list` and `tools/call`.

  client -> initialize {protocolVersion, capabilities, clientInfo}
         <- {protocolVersion, capabilities: {tools}, serverInfo, instructions}
  client -> notifications/initialized            (a notification: never answered)
  client -> tools/list                           <- {tools: [{name, description, inputSchema}]}
  client -> tools/call {name, arguments}         <- {content: [{type: "text", text}], isError}

The protocol version is the client's when it is one of the versions of the `initialize`
era, else the newest of them. An unknown method is -32601 (which is also how a client
that probes with the newer `server/discover` learns to fall back to `initialize`), an
unknown tool -32602; a refusal or a lost daemon is the tool's own error (`isError`), for
the model to read. Outside a job `initialize` is refused, saying why.

Only protocol messages reach stdout: fd 1 is kept for them and pointed at stderr for
everything else (a stray print, a library's warning), as Mercurial's command server does.
"""

import json
import os
import sys

from roost import __version__, job_identity
from roost.framing import MAX_LINE, LineReader, LineTooLong
from roost.mcp_server import tools

VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")   # newest first

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
# A server's own code (JSON-RPC's -32000 to -32099): this process is no job's.
NOT_IN_A_JOB = -32001

NOT_IN_A_JOB_TEXT = ("roost mcp is an agent's MCP server: it acts for the roost job it runs in (ROOST_JOB_ID and "
                     "ROOST_JOB_TOKEN say which), and this process is in no job. Start the agent under roost "
                     "(`roost run --profile ...`) to give it roost's tools.")


class RpcError(Exception):
    def __init__(self, code, message, data=None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


class Session:
    """One client's conversation: what it was told at `initialize`, and each request."""

    def __init__(self, env):
        self.env = env
        self.identity = job_identity.job_identity(env)
        self.initialized = False
        self.tools = {tool.name: tool for tool in tools.tools_for()}

    def handle(self, message):
        """The answer to one message (a dict), or None for a notification or a response."""
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            return _error(None, INVALID_REQUEST, "not a JSON-RPC 2.0 message")
        if "method" not in message:
            return None              # a response to a request of ours: we send none
        request_id = message.get("id")
        notification = "id" not in message
        method = message["method"]
        try:
            if not isinstance(method, str) or (request_id is not None and not isinstance(request_id, (str, int))):
                raise RpcError(INVALID_REQUEST, "a request needs a method (a string) and an id (a string or a number)")
            params = message.get("params")
            if params is None:
                params = {}
            if not isinstance(params, dict):
                raise RpcError(INVALID_PARAMS, "params must be an object")
            result = self.dispatch(method, params, notification)
        except RpcError as error:
            return None if notification else _error(request_id, error.code, error.message, error.data)
        if notification:
            return None
        return {"jsonrpc": "2.0", "id": request_id, "result": result}

    def dispatch(self, method, params, notification):
        if notification:
            return None               # notifications/initialized, /cancelled, ...: nothing to do
        if method == "ping":
            return {}
        if method == "initialize":
            return self.initialize(params)
        if method not in ("tools/list", "tools/call"):
            raise RpcError(METHOD_NOT_FOUND, f"method not found: {method}")
        if not self.initialized:
            raise RpcError(INVALID_REQUEST, f"{method} before initialize")
        if method == "tools/list":
            return {"tools": [tool.listed() for tool in self.tools.values()]}
        return self.call_tool(params)

    def initialize(self, params):
        if self.identity is None:
            raise RpcError(NOT_IN_A_JOB, NOT_IN_A_JOB_TEXT)
        asked = params.get("protocolVersion")
        self.initialized = True
        return {"protocolVersion": asked if asked in VERSIONS else VERSIONS[0],
                "capabilities": {"tools": {"listChanged": False}},
                "serverInfo": {"name": "roost", "version": __version__},
                "instructions": tools.INSTRUCTIONS}

    def call_tool(self, params):
        tool = self.tools.get(params.get("name"))
        if tool is None:
            raise RpcError(INVALID_PARAMS, f"unknown tool: {params.get('name')}")
        arguments = params.get("arguments")
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            raise RpcError(INVALID_PARAMS, "arguments must be an object")
        return tools.run(tool, arguments, self.env, self.identity)


def _error(request_id, code, message, data=None):
    error = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": error}


def _not_json(constant):
    raise ValueError(f"{constant} is not JSON")


def _finite(text):
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"the number {text[:20]}... overflows a double")
    return value


def parse(line):
    """One line as strict JSON: no NaN or Infinity, no number that overflows to one, no
    lone surrogate (it could not be written back as UTF-8); ValueError otherwise."""
    try:
        message = json.loads(line, parse_constant=_not_json, parse_float=_finite)
    except RecursionError:
        raise ValueError("nested too deep") from None
    try:
        json.dumps(message, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("a string holds a lone surrogate (\\ud800-\\udfff): it is not Unicode") from None
    except RecursionError:
        raise ValueError("nested too deep") from None
    return message


def answer(session, line):
    """The answer to one line: a message, a batch (the 2025-03-26 revision's), or None."""
    try:
        message = parse(line)
    except (ValueError, UnicodeDecodeError) as error:
        return _error(None, PARSE_ERROR, f"not JSON: {error}")
    if isinstance(message, list):
        if not message:
            return _error(None, INVALID_REQUEST, "an empty batch")
        answers = [reply for reply in map(session.handle, message) if reply is not None]
        return answers or None
    return session.handle(message)


def protect_stdout():
    """A file of our own on stdout's pipe, and fd 1 (and sys.stdout) pointed at stderr."""
    wire = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return wire


def serve(env, stdin_fd=0):
    """Answer the client on stdin and stdout until stdin ends. Returns the exit status."""
    wire = protect_stdout()
    session = Session(env)
    if session.identity is None:
        sys.stderr.write(f"roost mcp: {NOT_IN_A_JOB_TEXT}\n")
    reader = LineReader(MAX_LINE)
    while True:
        try:
            chunk = os.read(stdin_fd, 65536)
        except KeyboardInterrupt:
            return 0
        if not chunk:
            return 0
        try:
            lines = reader.lines(chunk)
        except LineTooLong:
            sys.stderr.write(f"roost mcp: a message over {MAX_LINE} bytes: the stream is out of step\n")
            return 1
        for line in lines:
            try:
                reply = answer(session, line)
                data = None if reply is None else \
                    json.dumps(reply, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"
            except Exception as error:     # one bad message never ends the server
                sys.stderr.write(f"roost mcp: a message could not be answered: {error!r}\n")
                data = json.dumps(_error(None, INTERNAL_ERROR, "the message could not be answered")).encode() + b"\n"
            if data is None:
                continue
            try:
                wire.write(data)
                wire.flush()
            except BrokenPipeError:
                return 0
