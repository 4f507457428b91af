"""No output is lost to a daemon killed between taking it off a job's pty and logging it
(roost.term.intake): it waits in the job's carry pipe, which the keeper holds, and the
next daemon logs it first. Where the kernel cannot splice from a pty, output is read and
written as before."""

import os

from conftest import DaemonProcess, tracebacks_in_log, wait_for
from jobkit import RUN_DAEMON, agent, dispatch, output, row as job_row, ticks, wait_row


class DiesHalfWayDaemon(DaemonProcess):
    """A real daemon that kills itself, once `die-now` is in its home, after it took output
    off a pty and before that output reached the log."""

    code = ("import os, signal, sys\n"
            "from roost.term import output_log\n"
            "take = output_log.OutputLog.take_from_pipe\n"
            "def take_or_die(self, pipe_fd, count):\n"
            "    if os.path.exists(os.path.join(os.environ['ROOST_HOME'], 'die-now')):\n"
            "        os.kill(os.getpid(), signal.SIGKILL)\n"
            "    return take(self, pipe_fd, count)\n"
            "output_log.OutputLog.take_from_pipe = take_or_die\n" + RUN_DAEMON)


class NoSpliceDaemon(DaemonProcess):
    """A real daemon on a kernel that refuses to splice from a pty."""

    code = ("import sys\n"
            "from roost.term import intake\n"
            "intake.splice_from_pty = False\n" + RUN_DAEMON)


def test_output_a_killed_daemon_took_off_the_pty_is_logged_by_the_next(home):
    go = os.path.join(os.path.dirname(home), "go")    # beside roost's home: a jailed job sees no more of it
    script = f'echo first; while [ ! -e {go} ]; do sleep 0.02; done; echo second; sleep 0.3; echo third; sleep 60'
    dying = DiesHalfWayDaemon(home).start()
    job_id = dispatch(dying, ["sh", "-c", script])
    pid = wait_row(dying, job_id, lambda row: row["pid"])["pid"]
    wait_for(lambda: "first" in output(home, job_id), what="its first line")
    open(os.path.join(home, "die-now"), "w").close()
    open(go, "w").close()
    assert dying.process.wait(15) == -9
    assert "second" not in output(home, job_id)     # taken off the pty, not logged
    os.unlink(os.path.join(home, "die-now"))
    daemon = DaemonProcess(home).start()
    try:
        wait_for(lambda: "first\r\nsecond\r\nthird\r\n" in output(home, job_id), what="every line, in order")
        assert output(home, job_id).count("second") == 1
        row = job_row(daemon, job_id)
        assert row["pid"] == pid and row["state"] in ("working", "blocked")
        wait_for(lambda: "third" in daemon.call("peek", id=job_id)["text"], what="the screen to show it")
    finally:
        daemon.stop()
    assert not tracebacks_in_log(home), tracebacks_in_log(home)[-3000:]


def test_where_splicing_is_refused_output_is_read_logged_and_adopted(home):
    daemon = NoSpliceDaemon(home).start()
    try:
        job_id = dispatch(daemon, agent("works_a_while.py", 60, 0.02))
        wait_for(lambda: len(ticks(output(home, job_id))) >= 5, what="its first ticks")
        daemon.kill9()
        before = ticks(output(home, job_id))[-1]
        daemon.start()
        wait_for(lambda: ticks(output(home, job_id))[-1] > before + 5, what="ticks logged after the restart")
        seen = ticks(output(home, job_id))
        assert seen[:before] == list(range(1, before + 1))
        wait_for(lambda: "tick " in daemon.call("peek", id=job_id)["text"], what="the screen to show a tick")
    finally:
        daemon.stop()
    assert not tracebacks_in_log(home), tracebacks_in_log(home)[-3000:]
