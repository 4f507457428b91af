"""Start roost's daemon at login: `install` writes a `systemd --user` unit
($XDG_CONFIG_HOME/systemd/user/roost.service, default ~/.config/...) that runs this
roost for this home (ROOST_HOME) and enables it where systemd runs for you; elsewhere
it writes the unit and says how to enable it. After a reboot the daemon starts at
login and brings each job back (a resumable agent resumes its own conversation).
The unit never starts a second daemon, and leaves the keeper and the jobs running
when the daemon stops. `remove` disables and removes it. Both may be run again.

Usage:
  roost service install [--json]
  roost service remove [--json]
  roost service --help
"""

from roost import job_identity
from roost.cli.context import ExitStatus, InsideAJob


def main(opts, ctx):
    from roost.cli import service_unit

    action = "install" if opts["install"] else "remove"
    job_id = job_identity.job_id(ctx.env)
    if job_id and not job_identity.is_persons_shell(ctx.env):
        # What starts at the person's login is the person's to choose, never a job's.
        raise InsideAJob(f"service {action}", job_id)
    try:
        result = service_unit.install(ctx.env) if action == "install" else service_unit.remove(ctx.env)
    except service_unit.Unwritable as error:
        ctx.stderr.write(f"roost service {action}: {error}\n")
        return ExitStatus.USAGE
    except OSError as error:
        ctx.stderr.write(f"roost service {action}: {error}\n")
        return ExitStatus.REFUSED
    if action == "install":
        done = f"wrote {result['unit']}" if result["written"] else f"{result['unit']} is already up to date"
    else:
        done = f"removed {result['unit']}" if result["removed"] else f"no unit at {result['unit']}"
    text = done if result["note"] in ("removed", "no unit was installed") else f"{done}\n{result['note']}"
    ctx.show(opts, result, text)
    return ExitStatus.OK
