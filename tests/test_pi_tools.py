"""pi's roost tools, without pi: the extension (clients/typescript/pi/roost.ts), compiled
with the package's pinned tsc (types unchecked: pi's own are not here) and run by node
against a stand-in of pi's API, registers exactly the tools `roost mcp` offers, with their
descriptions and argument schemas, and none outside a roost job. The real pi runs them in
test_pi_extension.py."""

import json
import os
import pathlib
import shutil
import subprocess

import pytest

from conftest import ROOT
from tskit import TSC, once
from roost.mcp_server.tools import INSTRUCTIONS, tools_for

PACKAGE = os.path.join(ROOT, "clients", "typescript")
EXTENSION = os.path.join(PACKAGE, "pi", "roost.ts")
NODE = shutil.which("node")

pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed: the pi extension needs it")

# A stand-in of pi's API: what the extension registers as it loads.
LOAD = """
const { default: roost } = await import(process.argv[2]);
const tools = [];
const handlers = [];
roost({ registerTool: (tool) => tools.push(tool), on: (event) => handlers.push(event) });
process.stdout.write(JSON.stringify({ handlers, tools: tools.map((tool) => ({
  name: tool.name, label: tool.label, description: tool.description, parameters: tool.parameters,
  promptGuidelines: tool.promptGuidelines ?? null, execute: typeof tool.execute })) }));
"""


@pytest.fixture(scope="module")
def extension():
    """The extension as node runs it: its JS, and a stand-in for pi's package (compiled once
    for the same sources: tskit.once)."""
    def build(directory):
        out = os.path.join(directory, "out")
        config = {
            "extends": os.path.join(PACKAGE, "tsconfig.json"),
            "compilerOptions": {"noCheck": True, "rewriteRelativeImportExtensions": True, "declaration": False,
                                "rootDir": PACKAGE, "outDir": out,
                                "typeRoots": [os.path.join(PACKAGE, "node_modules", "@types")]},
            "include": [EXTENSION],
        }
        with open(os.path.join(directory, "tsconfig.json"), "w", encoding="utf-8") as handle:
            json.dump(config, handle)
        built = subprocess.run([TSC, "-p", os.path.join(directory, "tsconfig.json")], capture_output=True, text=True,
                               timeout=180)
        assert built.returncode == 0, built.stdout + built.stderr
        with open(os.path.join(out, "package.json"), "w", encoding="utf-8") as handle:
            json.dump({"type": "module"}, handle)
        stub = os.path.join(out, "node_modules", "@mariozechner", "pi-coding-agent")
        os.makedirs(stub)
        with open(os.path.join(stub, "package.json"), "w", encoding="utf-8") as handle:
            json.dump({"name": "@mariozechner/pi-coding-agent", "type": "module", "main": "index.js"}, handle)
        with open(os.path.join(stub, "index.js"), "w", encoding="utf-8") as handle:
            handle.write('export const VERSION = "0.73.1";\n')
        with open(os.path.join(out, "load.mjs"), "w", encoding="utf-8") as handle:
            handle.write(LOAD)
    inputs = [os.path.join(PACKAGE, "pi", name) for name in os.listdir(os.path.join(PACKAGE, "pi"))
              if name.endswith(".ts")] + [os.path.join(PACKAGE, "src", "roost-agent.ts"),
                                          os.path.join(PACKAGE, "tsconfig.json")]
    return pathlib.Path(once({"project": "pi-extension", "load": LOAD}, inputs, build)) / "out"


def load(extension, env):
    """What the extension registers with pi as it loads in `env`."""
    clean = {name: value for name, value in os.environ.items() if not name.startswith(("ROOST_", "PI_"))}
    done = subprocess.run([NODE, str(extension / "load.mjs"), str(extension / "pi" / "roost.js")],
                          env={**clean, **env}, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout)


def in_a_job(tmp_path):
    # The socket is never reached: the agent connects on its first report, at pi's session_start.
    return {"ROOST_JOB_ID": "j1", "ROOST_JOB_TOKEN": "t" * 32, "ROOST_SOCKET": str(tmp_path / "no.sock")}


def test_the_extension_registers_exactly_the_tools_of_roost_mcp(extension, tmp_path):
    registered = load(extension, in_a_job(tmp_path))["tools"]
    offered = tools_for()
    assert [tool["name"] for tool in registered] == [tool.name for tool in offered]
    for mine, theirs in zip(registered, offered):
        assert mine["description"] == theirs.description, mine["name"]
        assert mine["parameters"] == theirs.schema, mine["name"]
        assert mine["label"] and mine["execute"] == "function"
    # roost mcp's instructions to the model are pi's guideline, given once.
    assert [tool["promptGuidelines"] for tool in registered if tool["promptGuidelines"]] == [[INSTRUCTIONS]]


def test_outside_a_job_the_extension_registers_nothing(extension):
    assert load(extension, {}) == {"handlers": [], "tools": []}
