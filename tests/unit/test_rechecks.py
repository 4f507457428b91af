"""When a quiet plain job's processes are looked at again (roost.term.reading with
roost.term.kernel_reading.Rechecks, issue 27): after a second, then twice as late while
they keep doing the same, up to a minute; at once again when what they do changes or a
person types. On a clock that moves only when told (roost.clock.ManualClock), with the
kernel's word given as its evidence."""

from roost.clock import ManualClock
from roost.term.kernel_reading import RECHECK_FIRST, RECHECK_MAX
from roost.term.reading import ScreenReading, TermProfile
from roost.unix.terminal_waits import BUSY, READS

SCREEN = ["compiling", ""]


class Kernel:
    """The evidence a probe gives, as the test sets it, and how often it was asked."""

    def __init__(self, verdict):
        self.verdict = verdict
        self.asked = 0

    def probe(self):
        self.asked += 1
        return {"verdict": self.verdict, "seen": []}


def quiet_plain_job(verdict):
    clock, kernel = ManualClock(), Kernel(verdict)
    reading = ScreenReading(TermProfile({"settleMs": 200}), typed=False, probe=kernel.probe, clock=clock)
    return reading, clock, kernel


def settled(reading, clock):
    assert reading.settle_left() == 0.2
    clock.advance(200)
    assert reading.settle_left() == 0
    reading.current = reading.judge(SCREEN, cursor_row=1)
    return reading.current


def looks_again(reading, clock):
    """Waits out the next look, as the job's reader parks until it: the seconds it waited."""
    left = reading.recheck_left()
    clock.advance(int(left * 1000))
    assert reading.recheck_left() == 0
    new = reading.recheck(SCREEN, cursor_row=1)
    if new is not None:
        reading.current = new
    return left


def test_a_quiet_busy_job_is_looked_at_again_ever_later_up_to_a_minute():
    reading, clock, kernel = quiet_plain_job(BUSY)
    assert settled(reading, clock)["status"] == "busy" and kernel.asked == 1
    waits = [looks_again(reading, clock) for _ in range(9)]
    assert waits == [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 60.0, 60.0, 60.0]
    assert waits[0] == RECHECK_FIRST and waits[-1] == RECHECK_MAX and kernel.asked == 10


def test_what_they_do_changing_starts_the_backoff_again():
    reading, clock, kernel = quiet_plain_job(BUSY)
    settled(reading, clock)
    assert [looks_again(reading, clock) for _ in range(4)] == [1.0, 2.0, 4.0, 8.0]
    kernel.verdict = READS       # the build is done and the program asks
    assert looks_again(reading, clock) == 16.0
    assert (reading.current["status"], reading.current["waitingFor"]) == ("waiting", "question")
    assert reading.recheck_left() == RECHECK_FIRST


def test_keys_a_person_types_bring_the_next_look_forward():
    reading, clock, _ = quiet_plain_job(BUSY)
    settled(reading, clock)
    for _ in range(6):
        looks_again(reading, clock)
    assert reading.recheck_left() == 60.0
    clock.advance(5000)
    assert reading.keys_given() is True           # its reader is woken to park for less
    assert reading.recheck_left() == RECHECK_FIRST
    assert reading.keys_given() is False          # already as soon as it gets
