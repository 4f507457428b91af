"""The manual stays true to the code: the README is a front page that opens with the two
commands (CONTRACT.md), every roost.json key the code reads is in docs/configuration.md,
docs/cli.md is what the commands' usage texts say, and the pages' links lead somewhere.
Each rule is shown failing on a planted violation."""

import functools
import os
import re
import sys

import pytest

from conftest import ROOT

sys.path.insert(0, os.path.join(ROOT, "scripts"))
sys.path.insert(0, os.path.join(ROOT, "tests"))
import cli_doc  # noqa: E402
import configkit  # noqa: E402

DOCS = os.path.join(ROOT, "docs")
README = os.path.join(ROOT, "README.md")
REFERENCE = os.path.join(DOCS, "configuration.md")
README_MAX_LINES = 250

# Keys roost reads that are no setting of the user's, each with why.
NOT_SETTINGS = {
    "agentProfiles.<name>.term.linear": "roost's own mark on a term that came over the wire (its patterns run "
                                        "on RE2); a profile's is dropped (roost.jobs.profiles.check_term)",
}


def read(path):
    with open(path, encoding="utf-8") as handle:
        return handle.read()


# -- the README -----------------------------------------------------------------------

def front_page_problems(text):
    """What keeps `text` from being the README CONTRACT.md asks for."""
    problems = []
    lines = text.splitlines()
    if len(lines) > README_MAX_LINES:
        problems.append(f"README.md has {len(lines)} lines, over {README_MAX_LINES}: move the manual's text "
                        f"into docs/ (a page a topic) and point to it")
    block = re.search(r"^```\w*\n(.*?)^```", text, re.M | re.S)
    before = text[:block.start()] if block else text
    if block is None or "\n## " in before:
        problems.append("README.md does not open with a block of its two commands before its first section")
    else:
        commands = [line.split()[0] for line in block.group(1).splitlines() if line.strip()]
        if commands != ["scripts/demo", "scripts/test"]:
            problems.append(f"README.md's first block runs {commands}, not scripts/demo then scripts/test")
    return problems


def test_the_readme_is_a_front_page_that_opens_with_the_two_commands():
    assert front_page_problems(read(README)) == []
    with open(os.path.join(ROOT, ".ci", "run"), encoding="utf-8") as handle:
        assert "scripts/test" in handle.read(), ".ci/run runs the README's second command"


def test_a_long_readme_or_one_that_opens_otherwise_breaks_the_rule():
    text = read(README)
    assert front_page_problems(text + "more\n" * README_MAX_LINES)[0].startswith("README.md has ")
    opened_otherwise = text.replace("scripts/demo ", "scripts/setup ", 1)
    assert "not scripts/demo then scripts/test" in front_page_problems(opened_otherwise)[0]
    assert "does not open" in front_page_problems("# roost\n\n## A section\n\n```sh\nscripts/demo\n```\n")[0]


# -- links ----------------------------------------------------------------------------

def _anchor(heading):
    """GitHub's anchor of a heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def broken_links(pages):
    """Links in `pages` ({path: text}) to a file or a heading that is not there."""
    broken = []
    for path, text in pages.items():
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target):
                continue
            file, _, anchor = target.partition("#")
            where = os.path.normpath(os.path.join(os.path.dirname(path), file)) if file else path
            if not os.path.exists(where):
                broken.append((os.path.relpath(path, ROOT), target))
            elif anchor and where.endswith(".md"):
                text_there = pages.get(where) or read(where)
                anchors = {_anchor(heading) for heading in re.findall(r"^#+ (.+)$", text_there, re.M)}
                anchors |= set(re.findall(r'<a id="([^"]+)">', text_there))
                if anchor not in anchors:
                    broken.append((os.path.relpath(path, ROOT), target))
    return broken


def manual_pages():
    pages = {README: read(README)}
    for name in sorted(os.listdir(DOCS)):
        if name.endswith(".md"):
            pages[os.path.join(DOCS, name)] = read(os.path.join(DOCS, name))
    return pages


def test_every_link_of_the_readme_and_the_docs_leads_somewhere():
    assert broken_links(manual_pages()) == []


def test_a_link_to_a_missing_page_or_heading_is_found():
    pages = manual_pages()
    planted = os.path.join(DOCS, "planted.md")
    pages[planted] = "# Planted\n\nSee [nowhere](nowhere.md) and [jobs](jobs.md#no-such-heading), [ok](jobs.md).\n"
    assert broken_links(pages) == [("docs/planted.md", "nowhere.md"), ("docs/planted.md", "jobs.md#no-such-heading")]


# -- the CLI reference ----------------------------------------------------------------

def test_docs_cli_md_is_what_the_usage_texts_say():
    assert read(cli_doc.TARGET) == cli_doc.render(), "docs/cli.md drifted from the commands' usage texts: run scripts/docs"


def test_every_command_has_its_section_in_the_cli_reference():
    from roost.cli.commands import COMMANDS

    written = read(cli_doc.TARGET)
    missing = [name for name in COMMANDS if f"\n## `roost {name}`\n" not in written]
    assert missing == [], f"commands without a section in docs/cli.md (run scripts/docs): {missing}"
    for name, (module, _) in COMMANDS.items():
        usage = cli_doc.usage(module)
        assert f"roost {name}" in usage, f"{module}.py's usage text does not name `roost {name}`"
        assert usage in written.split(f"\n## `roost {name}`\n", 1)[1]


def test_a_new_command_or_a_changed_usage_shows_as_drift(monkeypatch):
    from roost.cli.commands import COMMANDS

    before = cli_doc.render()
    monkeypatch.setitem(COMMANDS, "planted", ("ping", "a planted command"))
    after = cli_doc.render()
    assert after != before and "\n## `roost planted`\n\nA planted command.\n" in after
    monkeypatch.delitem(COMMANDS, "planted")
    monkeypatch.setattr(cli_doc, "usage", lambda module: "changed usage")
    assert cli_doc.render() != before


# -- the configuration reference --------------------------------------------------------

@functools.lru_cache(maxsize=None)
def keys_in_the_code():
    return configkit.keys_read(ROOT)


def documented_keys(text):
    """The keys docs/configuration.md lists: the first cell of its tables' rows."""
    keys = set()
    for line in text.splitlines():
        match = re.match(r"^\| `([^`]+)` \|", line)
        if match:
            keys.add(match.group(1))
    return keys


def missing_from_reference(found, documented):
    """What to add to docs/configuration.md, one line per key the code reads."""
    lines = []
    for key in sorted(set(found) - documented - set(NOT_SETTINGS)):
        where = ", ".join(sorted(found[key])[:3])
        section = "its profile tables" if key.startswith("agentProfiles.") else "its table of keys"
        lines.append(f"{where} reads roost.json's `{key}`, which docs/configuration.md does not list: add a row "
                     f"`| \\`{key}\\` | DEFAULT | what it does |` to {section}")
    return lines


def test_every_roost_json_key_the_code_reads_is_in_the_configuration_reference():
    found = keys_in_the_code()
    # The scanner sees the shapes roost reads its settings in (a sample of each).
    for key in ("reapIdleAfterMs", "prepareHoldMs", "notify.question", "notify.command", "concierge.rules[].match",
                "ssh.roost", "hosts", "attach.detachKey", "agentProfiles.<name>.sessionFrom.newestFile",
                "agentProfiles.<name>.term.settleMs", "agentProfiles.<name>.versionCommand"):
        assert key in found, key
    problems = missing_from_reference(found, documented_keys(read(REFERENCE)))
    assert problems == [], "\n" + "\n".join(problems)


def test_every_key_the_reference_lists_is_one_the_code_reads():
    found = keys_in_the_code()
    stale = sorted(documented_keys(read(REFERENCE)) - set(found))
    assert stale == [], (f"docs/configuration.md lists keys roost's code does not read: {stale}. Remove them, or, "
                         f"if the code does read them, in a way tests/configkit.py cannot follow, teach it that way")


PLANTED = '''
from roost import config as roost_config

KINDS = ("loud", "quiet")
SETTING = "plantedDelayMs"


class Planted:
    def __init__(self, config):
        self.config = config

    def delay(self):
        return self.config.get(SETTING)

    def sink(self):
        given = self.config.get("notify")
        given = given if isinstance(given, dict) else {}
        return given.get("pager"), helper(self.config.current().get("planted"))

    def kinds(self, profile):
        return {kind: profile.get(kind) for kind in KINDS}


def helper(section):
    for item in section or []:
        item.get("name")
    return section["depth"]
'''


def test_a_planted_key_read_in_any_of_its_shapes_is_named_with_the_row_to_add():
    found = configkit.keys_read(ROOT, extra={"roost.planted": ("roost/planted.py", PLANTED)})
    problems = missing_from_reference(found, documented_keys(read(REFERENCE)))
    named = [re.search(r"roost.json's `([^`]+)`", problem).group(1) for problem in problems]
    assert named == ["agentProfiles.<name>.loud", "agentProfiles.<name>.quiet", "notify.pager", "planted",
                     "planted.depth", "plantedDelayMs", "planted[].name"]
    assert problems[-2] == ("roost/planted.py:13 reads roost.json's `plantedDelayMs`, which docs/configuration.md "
                            "does not list: add a row `| \\`plantedDelayMs\\` | DEFAULT | what it does |` to its "
                            "table of keys")


@pytest.mark.parametrize("key", sorted(NOT_SETTINGS))
def test_what_is_no_setting_is_still_read(key):
    assert key in keys_in_the_code(), f"{key} is no longer read: take it out of NOT_SETTINGS"
