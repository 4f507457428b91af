"""`roost doctor`'s checks of roost itself, besides the agents' (roost.jobs.doctor):
the home and the socket private to the user (0700, 0600), the keeper running and
speaking this daemon's keeper wire, this daemon's version against the CLI's, and the
notification sinks (roost.notify.sink_checks). Each check is
{check, verdict: ok | problem | off, text}."""

import os
import stat

from roost import __version__
from roost.keeper import wire as keeper_wire
from roost.notify.sink_checks import check_sinks

OK, PROBLEM = "ok", "problem"


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
    if keeper.version != keeper_wire.VERSION:
        return _check("keeper", OK, f"running (pid {pid}), an older keeper speaking wire version {keeper.version} "
                                    f"(this daemon's: {keeper_wire.VERSION}) that serves any process of yours, "
                                    "not only the daemon; it leaves once none of its jobs runs, and the next "
                                    "serves only the daemon")
    return _check("keeper", OK, f"running (pid {pid}), wire version {keeper.version}")


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
    checks += [check_keeper(services.keeper), check_versions(cli_version)]
    return checks + check_sinks(services.config.get("notify"))
