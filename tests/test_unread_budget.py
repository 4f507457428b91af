"""What clients leave unread is bounded by who they are (issue 26 item 5): one job's
connections share a budget of a few MiB (roost.server.unread), so eight connections of a
job that ask for `list` and never read are dropped long before the spec's 16 MiB each;
the person's connections are untouched, and the daemon gives the bytes back."""

import json

from conftest import wait_for
from jobkit import agent, dispatch, output, wait_state
from roost.server.unread import PER_JOB

CONNECTIONS = 8
EACH = 6 * 1024 * 1024      # what each connection asks for: under the spec's 16 MiB, past the job's budget


def test_a_jobs_connections_that_never_read_share_one_budget(daemon):
    for number in range(12):        # a list worth reading: each answer some KiB
        dispatch(daemon, ["sleep", "300"], name=f"sleeper-{number}-" + "x" * 40)
    flood = dispatch(daemon, agent("unread_flood.py", CONNECTIONS, EACH), name="flood")
    wait_state(daemon, flood, "done", "failed", timeout=180)
    said = output(daemon.home, flood)
    report = json.loads(said[said.index("{"):said.rindex("}") + 1])
    assert report["answer"] > 4096, report
    assert [conn["dropped"] for conn in report["connections"]] == [True] * CONNECTIONS, report
    with open(f"{daemon.home}/daemon.log", encoding="utf-8") as handle:
        drops = [line for line in handle if "past its budget" in line]
    assert len(drops) == CONNECTIONS and all(f"a process of job {flood}" in line for line in drops)
    # Each was dropped once the job's connections together would pass the budget: none
    # held more than it.
    held = [int(line.split("would leave ")[1].split()[0]) for line in drops]
    assert max(held) <= PER_JOB + report["answer"], held
    # The person's connections are served as before, a whole list included.
    assert len(daemon.call("list", all=True)["jobs"]) == 13
    assert wait_for(lambda: daemon.call("ping"), what="a ping")
