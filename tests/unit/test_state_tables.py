"""The tables of states (roost.states.check_table): the two roost has pass, at import
and here, and a wrong one is refused naming what is wrong."""

import pytest

from roost.board import stages
from roost.jobs import run
from roost.states import check_table, table_problems


def test_the_job_runs_and_the_workspace_stages_are_checked_tables():
    assert table_problems(run.TRANSITIONS, run.PHASES) == []
    assert table_problems(stages.TRANSITIONS, stages.STAGES, before_first=None) == []


def test_a_table_naming_no_state_or_leaving_one_out_is_refused():
    planted = {**run.TRANSITIONS, "stopping": {"ended", "resting"}}
    del planted["starting"]
    assert table_problems(planted, run.PHASES) == [
        "'starting' has no line", "'stopping' may move to 'resting', which is no state"]
    with pytest.raises(ValueError, match="resting"):
        check_table(planted, run.PHASES)
    assert table_problems({**run.TRANSITIONS, "gone": set()}, run.PHASES) == ["'gone' has a line but is no state"]
