"""States as data (STYLE 5): a state machine is a tuple of its states and a table of the
moves allowed from each. `check_table` is called on each table where it is defined
(roost.jobs.run, roost.board.stages), at import, so a table that names a state it does
not have, or leaves a state without its line, stops roost before it runs."""


def table_problems(transitions, states, before_first=None):
    """What is wrong with `transitions` (state -> the states it may move to) over `states`,
    in words; [] when nothing. `before_first`: a key that is no state (the board's None:
    a workspace not started yet)."""
    known = set(states)
    problems = [f"{state!r} has no line" for state in states if state not in transitions]
    for state, moves in transitions.items():
        if state not in known and state != before_first:
            problems.append(f"{state!r} has a line but is no state")
        problems += [f"{state!r} may move to {move!r}, which is no state" for move in sorted(moves - known, key=str)]
    return problems


def check_table(transitions, states, before_first=None):
    """Refuses a table with a problem (ValueError naming each); returns the table."""
    problems = table_problems(transitions, states, before_first)
    if problems:
        raise ValueError("a table of states is wrong: " + "; ".join(problems))
    return transitions
