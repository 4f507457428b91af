"""The loop's turns shared by readers with more to do (issue 21): served in the order
they came, none left behind however many floods there are, and the loop turns between."""

import os
import shutil
import time

import gevent

from roost.term.turns import Turns
from termkit import Job, gwait

FLOOD = ["sh", "-c", "while :; do echo 'a line of output, as agents print them'; done"]


def test_callers_are_served_in_the_order_they_came_round_and_round():
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
    assert all(greenlet.dead for greenlet in callers)
    # Each caller's next turn comes only after every other caller's turn of that round.
    assert [round_number for round_number, _ in served] == sorted(round_number for round_number, _ in served)
    for round_number in range(4):
        assert [name for number, name in served if number == round_number] == list("abcdef")


def test_callers_are_served_while_another_greenlet_yields_on_every_turn():
    # A long job done in slices with gevent.sleep(0) between (a big file read, a screen
    # rebuilt from a log) leaves something pending on every turn of the loop: readers'
    # turns come all the same.
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
    try:
        gevent.joinall(callers, timeout=10)
    finally:
        spinning.kill()
    assert len(served) == 9, served


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
