"""What a run of the suite showed of the ops' contracts: run it with the daemons writing
a survey instead of failing (roost.ops: ROOST_CHECK_CONTRACTS set to a file's path),
then read the survey here.

    ROOST_CHECK_CONTRACTS=/tmp/survey.jsonl .venv/bin/python -m pytest -q
    .venv/bin/python scripts/contract_survey.py /tmp/survey.jsonl

It prints how many answers were checked, each op (and action) that never answered ok in
the run (its result was never checked against its row), and every answer outside its
row (a field or a code the row does not declare). Exit status 1 when there is any.
"""

import collections
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from roost import ops  # noqa: E402


def kinds():
    """Every op, and every action of an op with actions, as the survey names them."""
    ops.load()
    for name, row in sorted(ops.ROWS.items()):
        if row.by is None:
            yield name
        else:
            yield from (f"{name} {action}" for action in row.actions)


def main(argv):
    if len(argv) != 1:
        sys.stderr.write(__doc__)
        return 2
    answered, ok, problems = collections.Counter(), collections.Counter(), collections.Counter()
    with open(argv[0], encoding="utf-8") as survey:
        for line in survey:
            entry = json.loads(line)
            answered[entry["op"]] += 1
            if entry["outcome"] == "ok":
                ok[entry["op"]] += 1
            elif entry["outcome"] == "broken":
                problems[(entry["op"], entry["problem"])] += 1
    every = list(kinds())
    unchecked = [kind for kind in every if not ok[kind]]
    print(f"{sum(answered.values())} answers; {len(every) - len(unchecked)} of {len(every)} ops and actions "
          f"answered ok at least once, each answer checked against its row")
    if unchecked:
        print("never answered ok: " + ", ".join(unchecked))
    for (kind, problem), count in sorted(problems.items()):
        print(f"OUTSIDE ITS ROW ({count}x) {kind}: {problem}")
    return 1 if unchecked or problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
