"""issue 29 item 1: each agent's records read as roost counts them, on crafted records
of the shapes the agents write (tests/spendkit.py): a response counted once at its last
figures, a session's copies counted once, a Codex rollout's cumulative totals less what
a fork or a subagent inherited; prices and their absence."""

import os

from roost.spend import prices, usage
from roost.spend.follow import LineFollower
from roost.spend.ledger import Ledger
from spendkit import (claude_line, codex_count, codex_meta, codex_record, codex_turn, read_files, totals, usage as
                      codex_usage, write_lines)


def test_claude_lines_of_one_response_count_once_at_the_last_figures(tmp_path):
    path = write_lines(str(tmp_path / "s1.jsonl"), [
        claude_line("msg_1", "req_1", output=1), claude_line("msg_1", "req_1", output=7),
        claude_line("msg_1", "req_1", output=20, block="tool_use"),
        '{"type":"user","message":{"role":"user","content":"tool result"}}',
        claude_line("msg_2", "req_2", output=3, input=7, read=200, write=0)])
    whole, _ = totals(read_files("claude-code", [path]))
    # input counts the cache: 100 + 1000 + 50, then 7 + 200
    assert whole == [1150 + 207, 20 + 3, 1000 + 200, 50]


def test_a_claude_line_without_request_id_is_keyed_by_its_message_alone(tmp_path):
    path = write_lines(str(tmp_path / "s1.jsonl"), [
        claude_line("msg_1", None, output=2), claude_line("msg_1", None, output=9),
        claude_line("msg_1", "req_9", output=9)])     # the same message with a request id: another key
    whole, _ = totals(read_files("claude-code", [path]))
    assert whole[1] == 9 + 9


def test_a_resumed_session_repeating_lines_in_a_second_file_counts_them_once(tmp_path):
    first = [claude_line("msg_1", "req_1", output=5), claude_line("msg_1", "req_1", output=20),
             claude_line("msg_2", "req_2", output=3)]
    one = write_lines(str(tmp_path / "a" / "s1.jsonl"), first)
    two = write_lines(str(tmp_path / "a" / "s2.jsonl"), first + [claude_line("msg_3", "req_3", output=4)])
    whole, _ = totals(read_files("claude-code", [one, two]))
    assert whole[1] == 20 + 3 + 4
    assert whole[0] == 3 * 1150


def test_a_claude_file_read_in_pieces_counts_as_read_whole(tmp_path):
    path = str(tmp_path / "s1.jsonl")
    ledger = Ledger()
    follower = LineFollower(path)
    from roost.spend import claude_code
    line = claude_line("msg_1", "req_1", output=20)
    write_lines(path, [claude_line("msg_1", "req_1", output=5)])
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(line[:40])                      # a line the agent is still writing
    follower.read(lambda raw: claude_code.take(ledger, raw), claude_code.keep)
    assert totals(ledger)[0][1] == 5
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(line[40:] + "\n")
    follower.read(lambda raw: claude_code.take(ledger, raw), claude_code.keep)
    assert totals(ledger)[0][1] == 20
    assert follower.state()["offset"] == os.path.getsize(path)


def test_the_synthetic_error_lines_of_claude_code_spend_nothing(tmp_path):
    path = write_lines(str(tmp_path / "s1.jsonl"), [
        claude_line("msg_e", None, output=0, input=0, read=0, write=0, model="<synthetic>")])
    assert read_files("claude-code", [path]).empty()


def test_codex_repeated_last_usage_counts_the_cumulative_total_once(tmp_path):
    first = codex_usage(1150, 20, cached=1000, written=50)
    second = codex_usage(2300, 40, cached=2000, written=100)
    path = write_lines(str(tmp_path / "rollout-1.jsonl"), [
        codex_meta("p1"), codex_turn(),
        codex_count(first, first), codex_count(first, first),        # last_token_usage repeated in a turn
        codex_count(second, first), codex_count(second, first)])
    whole, by_model = totals(read_files("codex", [path]))
    assert whole == [2300, 40, 2000, 100]
    assert list(by_model) == ["gpt-5.5"]


def test_a_codex_fork_starts_at_its_parents_total_and_counts_only_its_own(tmp_path):
    parent_total = codex_usage(5000, 300, cached=4000)
    parent = write_lines(str(tmp_path / "rollout-p.jsonl"), [
        codex_meta("p1"), codex_turn(), codex_count(parent_total, parent_total)])
    fork = write_lines(str(tmp_path / "rollout-f.jsonl"), [
        codex_meta("f1", forked_from="p1"), codex_turn(),
        codex_count(parent_total, parent_total),                      # inherited, not spent again
        codex_count(codex_usage(5600, 340, cached=4500), codex_usage(600, 40, cached=500))])
    whole, _ = totals(read_files("codex", [parent, fork]))
    assert whole == [5600, 340, 4500, 0]


def test_a_codex_subagent_rollout_counts_only_its_own(tmp_path):
    inherited = codex_usage(8000, 100)
    child = write_lines(str(tmp_path / "rollout-c.jsonl"), [
        codex_meta("c1", parent_thread="p1"), codex_turn("gpt-5.4-mini"), codex_count(inherited, inherited),
        codex_count(codex_usage(8300, 130), codex_usage(300, 30))])
    whole, by_model = totals(read_files("codex", [child]))
    assert whole == [300, 30, 0, 0]
    assert list(by_model) == ["gpt-5.4-mini"]


def test_codex_per_response_records_count_each_response_once_across_files(tmp_path):
    use = codex_usage(1150, 20, cached=1000, written=50)
    lines = [codex_meta("p1"), codex_turn(), codex_record("p1", "resp_1", use), codex_count(use, use)]
    one = write_lines(str(tmp_path / "rollout-1.jsonl"), lines)
    fork = write_lines(str(tmp_path / "rollout-2.jsonl"), [codex_meta("f1", forked_from="p1"), codex_turn()] +
                       lines[2:] + [codex_record("f1", "resp_2", codex_usage(10, 2))])
    whole, _ = totals(read_files("codex", [one, fork]))
    assert whole == [1160, 22, 1000, 50]


def test_an_unpriced_model_makes_usd_null_and_is_named():
    table = prices.Prices({})
    usd, unpriced = table.usd({"claude-opus-4-8": [1_000_000, 0, 0, 0], "fake-model": [10, 1, 0, 0]})
    assert usd is None and unpriced == ["fake-model"]
    usd, unpriced = table.usd({"claude-opus-4-8": [1_000_000, 1_000_000, 0, 0]})
    assert unpriced == [] and usd == 5.0 + 25.0


def test_prices_from_roost_json_add_and_override():
    table = prices.Prices({"prices": {"fake-model": {"input": 3, "output": 15, "cacheRead": 0.3, "cacheWrite": 3.75},
                                      "claude-opus-4-8": {"input": 1, "output": 2}}})
    # 1M input of which 400k cache reads and 100k cache writes, 1M output
    usd, unpriced = table.usd({"fake-model": [1_000_000, 1_000_000, 400_000, 100_000]})
    assert unpriced == [] and usd == round(0.5 * 3 + 15 + 0.4 * 0.3 + 0.1 * 3.75, 6)
    assert table.usd({"claude-opus-4-8": [1_000_000, 1_000_000, 0, 0]})[0] == 3.0
    assert table.of("anthropic/claude-sonnet-4-5-20250929") is not None
    assert "fake-model" in table.listing()["fromConfig"]


def test_the_shipped_table_says_its_date_and_source():
    shipped = prices.shipped()
    assert shipped["date"] and "LiteLLM" in shipped["source"]
    assert shipped["models"]["claude-opus-4-8"]["input"] == 5.0


def test_usage_groups_a_task_across_its_jobs_and_days():
    entries = [{"id": "a1", "task": "7", "provider": "anthropic", "project": "/r", "host": "h",
                "tally": {"2026-12-05": {"claude-opus-4-8": [1000, 10, 0, 0]}}},
               {"id": "b2", "task": "7", "provider": "openai", "project": "/r", "host": "h",
                "tally": {"2026-12-06": {"gpt-5.5": [2000, 20, 0, 0]}}},
               {"id": "c3", "task": None, "provider": "openai", "project": "/r", "host": "h",
                "tally": {"2026-12-06": {"fake-model": [5, 5, 0, 0]}}}]
    table = prices.Prices({})
    by_task = usage.group(entries, "task", None, table)
    assert [group["key"] for group in by_task["groups"]] == ["7", None]
    assert by_task["groups"][0]["jobs"] == ["a1", "b2"] and by_task["groups"][0]["tokens"]["input"] == 3000
    assert by_task["total"]["usd"] is None and by_task["total"]["unpriced"] == ["fake-model"]
    since = usage.group(entries, "day", "2026-12-06", table)
    assert [group["key"] for group in since["groups"]] == ["2026-12-06"]
    assert usage.since_day("2d", today="2026-12-06") == "2026-12-04"


def _compact(line):
    import json
    return json.dumps(json.loads(line), separators=(",", ":"))       # as Claude Code writes its lines


def _read_in_batches(path):
    from roost.spend.readers import read_batch
    ledger, follower, state, more = Ledger(), LineFollower(path), {}, True
    while more:
        batch, _, more = read_batch(follower, "claude-code", state)
        batch.apply(ledger)
    return ledger


def test_the_daemons_reader_parses_a_runs_last_line_alone_and_counts_what_every_line_would(tmp_path):
    from roost.spend import claude_code

    # A response's text that holds both needles: escaped inside its string, never taken for structure.
    trap = claude_line("msg_9", "req_9", output=4)
    trap = trap.replace('"text": "x"', '"text": "\\"message\\":{\\"id\\":\\"msg_1\\" \\"requestId\\":\\"req_1\\""')
    lines = [_compact(line) for line in (
        claude_line("msg_1", "req_1", output=1), claude_line("msg_1", "req_1", output=7),
        '{"type": "user", "message": {"role": "user", "content": "tool result"}}',
        claude_line("msg_1", "req_1", output=20, block="tool_use"),
        claude_line("msg_2", None, output=3), claude_line("msg_2", None, output=5),
        trap, claude_line("msg_1", "req_1", output=20))]
    path = write_lines(str(tmp_path / "s1.jsonl"), lines)
    assert claude_code.response_of(lines[0].encode()) == b"msg_1\x1freq_1"
    assert claude_code.response_of(lines[4].encode()) is None          # no requestId: every line parsed
    assert claude_code.response_of(_compact(trap).encode()) == b"msg_9\x1freq_9"
    whole, _ = totals(_read_in_batches(path))
    assert whole == totals(read_files("claude-code", [path]))[0]
    assert whole[1] == 20 + 5 + 4
    # Parsed: one line of msg_1's first run, both of msg_2 (no requestId), the trap, the copy.
    parsed = []
    real_take = claude_code.take
    try:
        claude_code.take = lambda ledger, line, state=None: parsed.append(line) or real_take(ledger, line, state)
        import roost.spend.readers as readers
        readers.READERS["claude-code"] = (claude_code.keep, claude_code.take)
        _read_in_batches(path)
    finally:
        claude_code.take = real_take
        readers.READERS["claude-code"] = (claude_code.keep, real_take)
    assert len(parsed) == 5
