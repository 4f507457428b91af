"""The hub's NEEDS YOU ranking (roost.hub.fleet), replayed: pushes of rows and the board
in, the order and the reasons shown out. What answering a row unblocks first comes first;
a session parked at its usage limit needs nothing of the person now and comes last."""

from roost.hub.fleet import Fleet


def row(job_id, since, **fields):
    return dict({"id": job_id, "name": job_id, "state": "blocked", "status": "waiting", "waitingFor": "question",
                 "stateSince": since, "startedAt": since}, **fields)


def shown(fleet, group="needs"):
    return [(entry["id"], why) for name, rows in fleet.groups() if name == group for entry, why in rows]


def test_blocking_tasks_then_held_merges_then_dialogs_then_the_oldest_then_limits():
    fleet = Fleet()
    fleet.load([row("old", 100), row("new", 200), row("limit", 50, waitingFor="limit"),
                row("dialog", 300, waitingFor="dialog"), row("blocker", 400), row("reviewer", 500)],
               tasks=[{"id": 1, "state": "claimed", "owner": {"id": "blocker"}},
                      {"id": 2, "state": "open", "after": [1]}, {"id": 3, "state": "open", "after": [1]},
                      {"id": 4, "state": "claimed", "owner": {"id": "reviewer"}, "workspace": {"stage": "review"}}])
    assert shown(fleet) == [("blocker", "2 tasks wait on #1"), ("reviewer", "merge held: #4 review"),
                            ("dialog", "a dialog at start-up"), ("old", None), ("new", None), ("limit", None)]


def test_a_pushed_change_moves_a_row_between_groups_and_a_pin_goes_first_among_equals():
    fleet = Fleet()
    fleet.load([row("a", 100), row("b", 200)])
    assert shown(fleet) == [("a", None), ("b", None)]
    fleet.apply({"event": "rows", "rows": [row("b", 200, pinned=True)]})
    assert shown(fleet) == [("b", None), ("a", None)]
    fleet.apply({"event": "rows", "rows": [row("a", 100, state="working", status=None, waitingFor=None)]})
    assert shown(fleet) == [("b", None)] and shown(fleet, "working") == [("a", None)]
    fleet.apply({"event": "removed", "id": "b"})
    assert shown(fleet) == []


def test_the_other_groups_keep_the_users_order_of_their_own_group():
    fleet = Fleet()
    working = dict(state="working", status=None, waitingFor=None)
    fleet.load([row("first", 100, **working), row("second", 200, **working, order=0, orderKey="working"),
                row("stale", 50, **working, order=0, orderKey="needs")])
    assert [entry for entry, _ in shown(fleet, "working")] == ["second", "stale", "first"]
