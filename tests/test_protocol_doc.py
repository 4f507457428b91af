"""docs/protocol.md is generated from the op table's rows and the callers' table
(scripts/protocol_doc.py): it must say what the rows say (every op's arguments, result
and codes), and every milestone the code names must be described there."""

import os
import sys

from conftest import ROOT

sys.path.insert(0, os.path.join(ROOT, "scripts"))
import protocol_doc  # noqa: E402


def test_docs_protocol_md_is_what_the_tables_say():
    with open(protocol_doc.TARGET, encoding="utf-8") as handle:
        written = handle.read()
    assert written == protocol_doc.render(), "docs/protocol.md drifted from the op tables: run scripts/docs"


def test_every_op_has_its_section_with_its_callers():
    text = protocol_doc.render()
    from roost import ops

    for name in ops.load():
        assert f"### `{name}`\n" in text
    assert "Callers: Person. Refused: Concierge (`unsupported`)" in text.split("### `dispatch`")[1].split("###")[0]


def test_every_op_shows_its_arguments_result_and_codes():
    from roost import ops

    text = protocol_doc.render()
    for name in ops.load():
        section = text.split(f"### `{name}`\n")[1].split("\n### ")[0]
        assert "Not declared yet" not in section, name
        assert ("Args:" in section or "Args: one of these" in section) and "Result" in section, name
        assert "Codes: " in section, name
    dispatch = text.split("### `dispatch`\n")[1].split("\n### ")[0]
    assert "`DispatchArgs` (see [shared shapes]" in dispatch and "Codes: `bad_request`" in dispatch
    shapes = text.split("## Shared shapes")[1].split("## Ops")[0]
    assert "| `cwd` | `string` | yes | >= 1 chars |" in shapes.split("#### `DispatchArgs`")[1]
    pin = text.split("### `pin`\n")[1].split("\n### ")[0]
    assert "| `pinned` | `boolean` | yes |" in pin and "`not_found`" in pin


def test_a_change_of_an_ops_row_shows_as_drift(monkeypatch):
    from roost import ops
    from roost.contract import Flag

    ops.load()
    before = protocol_doc.render()
    monkeypatch.setitem(ops.ROWS["ping"].args.fields, "loud", Flag(default=False))
    after = protocol_doc.render()
    assert "| `loud` | `boolean` | no |" in after.split("### `ping`")[1].split("###")[0]
    assert before != after


def test_every_milestone_the_code_names_is_described():
    named = protocol_doc.named_milestones()
    assert 47 in named and 43 in named
    assert sorted(set(named) - set(protocol_doc.MILESTONES)) == []


def test_a_change_of_the_callers_table_shows_as_drift(monkeypatch):
    from roost.ops import callers

    before = protocol_doc.render()
    monkeypatch.setitem(callers.REFUSED, "ping", {callers.SESSION: "unsupported"})
    after = protocol_doc.render()
    assert before != after
    assert "Refused: Session (`unsupported`)" in after.split("### `ping`")[1].split("###")[0]
