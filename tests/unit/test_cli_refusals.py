"""The CLI's own table of the person's ops (roost.cli.persons_ops) says what the daemon's
(roost.ops.callers) says: for every op and every action, the person may and a job's
process may not, or not."""

from roost.cli import persons_ops
from roost.ops import callers


def disagreements(cli_says, daemon_says):
    found = []
    for op in sorted(callers.REFUSED):
        for action in sorted(callers.ACTIONS.get(op, {None: None})):
            args = {"action": action} if action is not None else {}
            if cli_says(op, args) != daemon_says(op, args):
                found.append(f"{op} {action}" if action else op)
    return found


def test_the_cli_refuses_inside_a_job_exactly_what_the_daemon_does():
    assert disagreements(persons_ops.is_the_persons, callers.is_the_persons) == []


def test_a_table_that_drifted_is_named():
    drifted = lambda op, args: persons_ops.is_the_persons(op, args) and op != "keys"     # noqa: E731
    assert disagreements(drifted, callers.is_the_persons) == ["keys"]
