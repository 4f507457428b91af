"""The CLI as a person runs it: help, version, exit statuses, --json, auto-start."""

import json
import os
import subprocess
import sys

from clikit import cli
from conftest import ROOT, wait_for
from roost.cli.commands import COMMANDS


def stop_daemon(home):
    cli(home, "shutdown")


COMMAND_MODULES = os.path.join(ROOT, "roost", "cli", "commands")


def missing_from_help(text, commands, modules):
    """The commands `roost --help` does not list with their summary, and the command
    modules no row of the table names (a command nobody can run)."""
    missing = [name for name, (_, summary) in commands.items() if f"  {name} " not in text or summary not in text]
    named = {module for module, _ in commands.values()}
    return missing + sorted(module for module in modules if module not in named)


def command_modules():
    return [name[:-3] for name in os.listdir(COMMAND_MODULES) if name.endswith(".py") and name != "__init__.py"]


def test_help_lists_every_subcommand_with_a_summary(home):
    out = cli(home, "--help")
    assert out.returncode == 0
    text = out.stdout.decode()
    assert len(COMMANDS) > 30 and missing_from_help(text, COMMANDS, command_modules()) == []
    assert not os.path.exists(home), "--help must not start a daemon"
    # It can fail: a command left out of the help, a module left out of the table.
    assert missing_from_help(text.replace("  attach ", "  "), COMMANDS, command_modules()) == ["attach"]
    assert missing_from_help(text, COMMANDS, command_modules() + ["planted"]) == ["planted"]


def test_version(home):
    from roost import __version__
    out = cli(home, "--version")
    assert out.returncode == 0 and out.stdout.decode() == f"roost {__version__} (from source)\n"


def test_bad_usage_exits_2_with_one_clear_line(home):
    out = cli(home, "ping", "--nonsense")
    assert out.returncode == 2
    assert out.stderr.decode().splitlines()[0] == "roost ping: these arguments do not fit its usage"
    out = cli(home, "no-such-command")
    assert out.returncode == 2 and "no command 'no-such-command'" in out.stderr.decode()


def test_no_daemon_reachable_exits_3(home):
    out = cli(home, "ping", env={"ROOST_SOCKET": "/nonexistent/roost.sock"})
    assert out.returncode == 3
    assert out.stderr.decode().count("\n") == 1 and "no daemon answers" in out.stderr.decode()


def test_any_command_starts_the_daemon_which_outlives_it(home):
    try:
        out = cli(home, "ping", "--json")
        assert out.returncode == 0, out.stderr
        result = json.loads(out.stdout)
        assert set(result) == {"pid", "version"}
        os.kill(result["pid"], 0)           # the daemon lives on after the CLI exited
        again = json.loads(cli(home, "status", "--json").stdout)
        assert again["pid"] == result["pid"]
        assert cli(home, "status").stdout.decode().startswith("roost ")
    finally:
        stop_daemon(home)


def test_refused_exits_1_with_the_code(home):
    # `shutdown` twice: the second finds no daemon and says so (exit 0, nothing to do).
    try:
        assert cli(home, "ping").returncode == 0
        out = cli(home, "shutdown", "--json")
        assert out.returncode == 0 and json.loads(out.stdout) == {}
        wait_for(lambda: not os.path.exists(os.path.join(home, "roost.sock")))
        assert cli(home, "shutdown").stdout.decode().strip() == "no daemon is running"
    finally:
        stop_daemon(home)


def test_the_cli_path_imports_neither_gevent_nor_dulwich(home):
    code = ("import sys, runpy\n"
            "sys.argv = ['roost', '--version']\n"
            "try:\n    runpy.run_module('roost', run_name='__main__')\n"
            "except SystemExit:\n    pass\n"
            "from roost.cli.main import main\n"
            "import io\n"
            "main(['ping', '--help'], stdout=io.StringIO())\n"
            "heavy = [m for m in ('gevent', 'dulwich', 'pexpect', 'pyte') if m in sys.modules]\n"
            "print('heavy:' + ','.join(heavy))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=30,
                         env={**os.environ, "PYTHONPATH": ROOT, "ROOST_HOME": home})
    assert out.returncode == 0, out.stderr
    assert out.stdout.decode().strip().splitlines()[-1] == "heavy:"


def test_agent_file_writes_the_bundled_copy(home, tmp_path):
    out = cli(home, "agent-file", str(tmp_path))
    assert out.returncode == 0, out.stderr
    with open(os.path.join(ROOT, "roost_agent.py"), "rb") as original:
        assert (tmp_path / "roost_agent.py").read_bytes() == original.read()
    assert not os.path.exists(os.path.join(home, "roost.sock"))
