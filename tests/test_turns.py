"""The loop's turns shared by readers with more to do (issue 21): served in the order
they came, none left behind however many floods there are, and the loop turns between."""

import json
import os
import shutil
import subprocess
import textwrap

import gevent

from conftest import PYTHON, ROOT
from termkit import Job, gwait

FLOOD = ["sh", "-c", "while :; do echo 'a line of output, as agents print them'; done"]


# The two scenarios below run in a fresh interpreter: a hub of its own, as the daemon's
# is, not one a worker's earlier test files have left watchers, timers and threads in.
ROUND_AND_ROUND = textwrap.dedent("""
    import json, time
    import gevent
    from roost.term.turns import Turns

    turns = Turns()
    served = []

    def caller(name):
        for round_number in range(4):
            turns.wait()
            served.append((round_number, name))
            started = time.perf_counter()
            while time.perf_counter() - started < 0.002:    # work that fills the turns
                pass

    callers = [gevent.spawn(caller, name) for name in "abcdef"]
    gevent.joinall(callers, timeout=30)
    print(json.dumps({"ended": all(greenlet.dead for greenlet in callers), "served": served}))
""")

BESIDE_A_SPINNER = textwrap.dedent("""
    import json
    import gevent
    from roost.term.turns import Turns

    def spinner():
        while True:
            gevent.sleep(0)

    spinning = gevent.spawn(spinner)
    turns = Turns()
    served = []

    def caller(name):
        for round_number in range(3):
            turns.wait()
            served.append((round_number, name))

    callers = [gevent.spawn(caller, name) for name in "abc"]
    gevent.joinall(callers, timeout=10)
    spinning.kill()
    print(json.dumps({"ended": all(greenlet.dead for greenlet in callers), "served": served}))
""")


def run_fresh(code):
    done = subprocess.run([PYTHON, "-c", code], capture_output=True, timeout=60, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": ROOT})
    assert done.returncode == 0, done.stderr.decode()
    return json.loads(done.stdout)


def test_callers_are_served_in_the_order_they_came_round_and_round():
    ran = run_fresh(ROUND_AND_ROUND)
    served = [tuple(turn) for turn in ran["served"]]
    assert ran["ended"], served
    # Each caller's next turn comes only after every other caller's turn of that round.
    assert [round_number for round_number, _ in served] == sorted(round_number for round_number, _ in served)
    for round_number in range(4):
        assert [name for number, name in served if number == round_number] == list("abcdef")


def test_callers_are_served_while_another_greenlet_yields_on_every_turn():
    # A long job done in slices with gevent.sleep(0) between (a big file read, a screen
    # rebuilt from a log) leaves something pending on every turn of the loop: readers'
    # turns come all the same.
    ran = run_fresh(BESIDE_A_SPINNER)
    assert ran["ended"] and len(ran["served"]) == 9, ran


def test_more_floods_than_a_turn_holds_are_each_read_and_the_loop_turns_between():
    floods = [Job(FLOOD, term={"settleMs": 100}) for _ in range(12)]
    ticks = []

    def ticker():
        while True:
            ticks.append(1)
            gevent.sleep(0.001)

    clock = gevent.spawn(ticker)
    try:
        gwait(lambda: all(len(job.log_bytes()) >= 256 * 1024 for job in floods), timeout=60,
              what="every flood's log to grow (none left behind the others)")
        seen = len(ticks)
        gwait(lambda: len(ticks) > seen + 10, timeout=10, what="the loop to turn among the floods")
    finally:
        clock.kill()
        for job in floods:
            job.close()
            shutil.rmtree(job.dir, ignore_errors=True)
    assert not any(os.path.exists(job.dir) for job in floods)
