"""`roost help`: the manual of docs/ in the terminal, by topic, as `hg help` shows its
own. Every page is a topic; an unknown one is bad usage with the list; a page goes
through the pager in a terminal; the CLI's path stays light."""

import fcntl
import io
import os
import pty
import struct
import subprocess
import sys
import termios

import pytest

from conftest import PYTHON, ROOT, wait_for
from roost.cli import manual
from roost.cli.main import main

DOCS = os.path.join(ROOT, "docs")


def roost(home, *argv, env=None, **kwargs):
    environ = {**os.environ, "ROOST_HOME": home, "PYTHONPATH": ROOT, **(env or {})}
    environ.pop("ROOST_SOCKET", None)
    return subprocess.run([PYTHON, "-m", "roost", *argv], env=environ, capture_output=True, timeout=30,
                          cwd="/", **kwargs)


def pages():
    """{name: title} of docs/, read here as a person would: a page whose first line is
    `# Title`."""
    found = {}
    for entry in sorted(os.listdir(DOCS)):
        if entry.endswith(".md"):
            with open(os.path.join(DOCS, entry), encoding="utf-8") as handle:
                first = handle.readline()
            if first.startswith("# "):
                found[entry[:-3]] = first[2:].strip()
    return found


def test_help_lists_every_page_of_the_docs_with_its_title(home):
    done = roost(home, "help")
    assert done.returncode == 0, done.stderr
    listed = done.stdout.decode()
    assert len(pages()) >= 15
    for name, title in pages().items():
        assert f"  {name} " in listed and title.replace("`", "") in listed.replace("`", ""), name
    assert not os.path.exists(home), "help must not start a daemon"


@pytest.mark.parametrize("topic", sorted(pages()))
def test_each_topic_shows_its_page_as_plain_text(home, topic):
    done = roost(home, "help", topic)
    assert done.returncode == 0, done.stderr
    text = done.stdout.decode()
    title = pages()[topic].replace("`", "")
    assert text.splitlines()[:2] == [title, "=" * len(title)]
    assert "```" not in text and "](" not in text and "\x1b" not in text     # no markdown, no ANSI in a pipe
    assert len(text.splitlines()) > 10


def test_an_unknown_topic_is_bad_usage_with_the_list(home):
    done = roost(home, "help", "no-such-topic")
    assert done.returncode == 2 and done.stdout == b""
    said = done.stderr.decode()
    assert said.startswith("roost help: no topic 'no-such-topic'\n")
    assert all(f"  {name} " in said for name in pages())


def test_a_topic_is_found_by_a_word_of_its_title_and_a_command_by_its_name(home):
    by_word = roost(home, "help", "notifications")
    assert by_word.returncode == 0 and by_word.stdout.decode().startswith("The hub and notifications\n")
    command = roost(home, "help", "ping")
    assert command.returncode == 0 and command.stdout.decode() == roost(home, "ping", "--help").stdout.decode()
    several = roost(home, "help", "and")          # in several titles: which one is meant?
    assert several.returncode == 2 and "names several topics" in several.stderr.decode()


def test_a_page_added_to_docs_is_a_topic_with_no_code_changed(tmp_path, monkeypatch):
    for name in ("jobs.md", "hub.md"):
        (tmp_path / name).write_text((open(os.path.join(DOCS, name), encoding="utf-8").read()))
    (tmp_path / "costs.md").write_text("# Costs and budgets\n\nWhat the fleet spent: see [jobs.md](jobs.md).\n")
    (tmp_path / "notes.md").write_text("no title line: not a topic\n")
    monkeypatch.setattr(manual, "docs_dir", lambda: str(tmp_path))
    out, err = io.StringIO(), io.StringIO()
    assert main(["help"], env={}, stdout=out, stderr=err) == 0
    assert "  costs  Costs and budgets\n" in out.getvalue() and "notes" not in out.getvalue()
    out = io.StringIO()
    assert main(["help", "budgets"], env={}, stdout=out, stderr=err) == 0
    assert out.getvalue() == "Costs and budgets\n=================\n\n  What the fleet spent: see `roost help jobs`.\n"


def test_in_a_terminal_the_page_goes_through_the_pager(home, tmp_path):
    """$PAGER (its words, as the shells take it), given the page rendered for the
    terminal's width, headings in bold."""
    paged = tmp_path / "paged.txt"
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 60, 0, 0))
    env = {**os.environ, "ROOST_HOME": home, "PYTHONPATH": ROOT, "PAGER": f"sh -c 'echo \"$LESS\" > {paged}.less; "
           f"cat > {paged}.tmp && mv {paged}.tmp {paged}'"}
    env.pop("NO_COLOR", None)
    env.pop("LESS", None)
    for size in ("COLUMNS", "LINES"):     # they outrank the terminal's size (a pytest-xdist worker sets them)
        env.pop(size, None)
    process = subprocess.Popen([PYTHON, "-m", "roost", "help", "limits"], env=env, stdin=slave, stdout=slave,
                               stderr=slave, cwd="/")
    os.close(slave)
    try:
        assert process.wait(timeout=30) == 0
        wait_for(paged.exists, what="the pager to get the page")
    finally:
        os.close(master)
    text = paged.read_text()
    assert (tmp_path / "paged.txt.less").read_text() == "FRX\n", "less shows the bold headings, the page stays"
    assert text.startswith("\x1b[1mUsage limits and recovery\x1b[0m\n=========================\n")
    body = [line for line in text.splitlines() if not line.startswith("    ")]    # code is not wrapped
    assert max(len(line) for line in body) < 60


def test_no_pager_unless_one_is_there():
    assert manual.pager_argv({"PAGER": ""}) is None
    assert manual.pager_argv({"PAGER": "less -R"}) == ["less", "-R"]
    assert manual.pager_argv({"PATH": "/nonexistent"}) is None
    out = io.StringIO()
    manual.show("a page\n", out, {"PAGER": "/nonexistent/pager"}, to_a_terminal=True)
    assert out.getvalue() == "a page\n", "a pager that cannot start: the page is written as it is"


def test_help_imports_nothing_heavy(home):
    code = ("import io, sys\nfrom roost.cli.main import main\n"
            "main(['help', 'configuration'], stdout=io.StringIO())\nmain(['help'], stdout=io.StringIO())\n"
            "print(','.join(m for m in ('gevent', 'dulwich', 'pexpect', 'pyte', 'ujson') if m in sys.modules))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=30,
                          env={**os.environ, "PYTHONPATH": ROOT, "ROOST_HOME": home})
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode().strip() == ""


def test_the_shells_complete_the_topics(home):
    done = roost(home, "__complete", "help", "con")
    assert done.stdout.decode().split() == ["concierge", "configuration"]


# -- the rendering ----------------------------------------------------------------------

def test_markdown_is_rendered_plainly_for_the_terminal():
    page = ("# A `title`\n\nSome **bold** words and `code that stays whole`, a link to [the jobs](jobs.md#x),\n"
            "one to [protocol.md](protocol.md) and one [out](https://example.org).\n\n"
            "## Keys\n\n| key | what |\n|---|---|\n| `a` | one \\| two |\n\n"
            "- an item that is long enough to be wrapped onto a second line at this width\n"
            "  and goes on\n- another\n\n```sh\nroost run -- a command longer than the width, never wrapped at all\n```\n")
    assert manual.render(page, width=50) == (
        "A title\n"
        "=======\n"
        "\n"
        "  Some bold words and `code that stays whole`, a\n"
        "  link to the jobs (`roost help jobs`), one to\n"
        "  `roost help protocol` and one out\n"
        "  (https://example.org).\n"
        "\n"
        "Keys\n"
        "----\n"
        "\n"
        "  key  what\n"
        "  ---  ---------\n"
        "  a    one | two\n"
        "\n"
        "  - an item that is long enough to be wrapped\n"
        "    onto a second line at this width and goes on\n"
        "  - another\n"
        "\n"
        "    roost run -- a command longer than the width, never wrapped at all\n")


def test_a_table_too_wide_for_the_terminal_becomes_blocks():
    table = ("| key | default | what it does |\n|---|---|---|\n"
             "| `stopGraceMs` | `3000` | SIGTERM to SIGKILL when stopping a job, after this many milliseconds |\n")
    assert manual.render(table, width=50) == (
        "  stopGraceMs\n"
        "      default: 3000\n"
        "      SIGTERM to SIGKILL when stopping a job,\n"
        "      after this many milliseconds\n")
    terms = "| key | does |\n|---|---|\n| `q` | quit the hub, and say so at length to fill the line |\n"
    assert manual.render(terms, width=40) == "  q  quit the hub, and say so at length\n     to fill the line\n"
