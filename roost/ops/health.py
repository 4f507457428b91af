"""`roost doctor`'s checks of roost itself, besides the agents' (roost.jobs.doctor):
the home and the socket private to the user (0700, 0600), the keeper running and
speaking this daemon's keeper wire, the jobs' jail (issue 26) and a keeper that died
unasked, this daemon's version against the CLI's, and the notification sinks
(roost.notify.sink_checks). Each check is {check, verdict: ok | problem | off, text}."""

import os
import stat
import time

from roost import __version__
from roost.keeper import wire as keeper_wire
from roost.keeper.client import ADMITS_ONLY_ITS_DAEMON
from roost.notify.sink_checks import check_sinks

OK, PROBLEM, OFF = "ok", "problem", "off"
# What a job that runs without a jail can still do (docs/security.md).
UNJAILED_CAN = ("a job without a jail runs as you: it can read and write all your files (roost's home, "
                "other jobs' directories, their tokens), signal and trace your processes (other jobs, the "
                "keeper), and only the ancestry of its processes tells roost they are not you")


def _check(name, verdict, text):
    return {"check": name, "verdict": verdict, "text": text}


def check_mode(name, path, want, kind):
    """`path` is a `kind` (S_ISDIR, S_ISSOCK) of ours with exactly the mode `want`."""
    try:
        info = os.lstat(path)
    except OSError as error:
        return _check(name, PROBLEM, f"{path}: {error.strerror}")
    mode = stat.S_IMODE(info.st_mode)
    if not kind(info.st_mode):
        return _check(name, PROBLEM, f"{path} is not what roost made there")
    if info.st_uid != os.getuid():
        return _check(name, PROBLEM, f"{path} belongs to uid {info.st_uid}, not to you (uid {os.getuid()})")
    if mode != want:
        return _check(name, PROBLEM, f"{path} has mode {mode:04o}, not {want:04o}: others may reach it "
                                     f"(chmod {want:o} {path})")
    return _check(name, OK, f"{path} ({want:04o})")


def check_keeper(keeper):
    pid = keeper.keeper_pid
    if not keeper.connected or pid is None:
        return _check("keeper", PROBLEM, "no keeper is connected: no job can start until one is")
    try:
        os.kill(pid, 0)
    except OSError:
        return _check("keeper", PROBLEM, f"the keeper (pid {pid}) is gone")
    if isinstance(keeper.version, int) and ADMITS_ONLY_ITS_DAEMON <= keeper.version < keeper_wire.VERSION:
        return _check("keeper", OK, f"running (pid {pid}), an older keeper speaking wire version {keeper.version} "
                                    f"(this daemon's: {keeper_wire.VERSION}): it serves only the daemon but cannot "
                                    "say what its jobs' processes wait on, so the daemon reads /proc itself "
                                    "(where it may not, a quiet plain job is shown as ?: docs/states.md)")
    if keeper.version != keeper_wire.VERSION:
        return _check("keeper", OK, f"running (pid {pid}), an older keeper speaking wire version {keeper.version} "
                                    f"(this daemon's: {keeper_wire.VERSION}) that serves any process of yours, "
                                    "not only the daemon; it leaves once none of its jobs runs, and the next "
                                    "serves only the daemon")
    return _check("keeper", OK, f"running (pid {pid}), wire version {keeper.version}")


def check_jail(runner, config):
    """`jail`: ok when jobs run jailed; off when roost.json turns it off; PROBLEM when
    bubblewrap cannot make one. Names the live jobs that run without one, and why."""
    works, why, version, _ = runner.jails.get()
    unjailed = [job for job in runner.registry.all() if job.running and not job.record.get("sandboxed")]
    named = ""
    if unjailed:
        shown = ", ".join(f"{job.id} ({job.name}{', --as-me' if job.launch.get('person') else ''})"
                          for job in unjailed[:10])
        named = f"; {len(unjailed)} running without one: {shown}"
    if config.get("sandbox") is False:
        return _check("jail", OFF, f"roost.json says \"sandbox\": false: no job is jailed; {UNJAILED_CAN}")
    if not works:
        return _check("jail", PROBLEM, f"{why}: every job runs without a jail; {UNJAILED_CAN}")
    text = f"each job runs in a jail of its own ({version or 'bwrap'}){named}"
    return _check("jail", OK, text + (f"; {UNJAILED_CAN}" if unjailed else ""))


def check_keeper_losses(losses):
    """`keeper deaths`: shown once a keeper died unasked (roost.jobs.keeper_loss)."""
    if not losses.losses:
        return []
    last = losses.losses[-1]
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(last.get("at", 0) / 1000))
    left = losses.left_now()
    said = (f"{len(losses.losses)} keeper death(s) roost did not ask for, the last (pid {last.get('pid')}) at {when}: "
            "a job without a jail may have killed it")
    if not left:
        return [_check("keeper deaths", OK, said + "; no process it left to init runs now")]
    shown = ", ".join(f"{pid} ({command[:60]})" for pid, command in left[:10])
    return [_check("keeper deaths", PROBLEM, said + f"; processes it left to init run now and are never taken for "
                                                    f"you: {shown} (end them, or run roost from a new terminal "
                                                    "if one is yours)")]


def check_versions(cli_version):
    if cli_version is None:
        return _check("version", OK, f"the daemon runs roost {__version__}")
    if cli_version != __version__:
        return _check("version", PROBLEM, f"the daemon runs roost {__version__}, this CLI is {cli_version}: "
                                          "`roost shutdown` and the next command starts the CLI's own")
    return _check("version", OK, f"the daemon and the CLI are both roost {__version__}")


def check_roost(services, cli_version=None):
    socket_path = services.socket_path
    checks = [check_mode("home", services.home, 0o700, stat.S_ISDIR),
              check_mode("socket", socket_path, 0o600, stat.S_ISSOCK)]
    if os.path.dirname(socket_path) != services.home:
        checks.append(check_mode("socket directory", os.path.dirname(socket_path), 0o700, stat.S_ISDIR))
    checks += [check_keeper(services.keeper), check_jail(services.runner, services.config)]
    checks += check_keeper_losses(services.keeper_losses) + [check_versions(cli_version)]
    return checks + check_sinks(services.config.get("notify"))
