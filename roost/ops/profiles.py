"""roost's own ops on agent profiles: `profiles` (every profile a launch may name, and
where each comes from) and `doctor` (is each profile's agent there, at a version its
profile was checked on: roost.jobs.doctor)."""

from roost.errors import bad_request
from roost.jobs import doctor, screen_drift
from roost.jobs import profiles as agent_profiles
from roost.ops import args as read
from roost.ops import health
from roost.ops import op


@op("profiles")
def profiles(call):
    config = call.services.config
    return {"profiles": agent_profiles.listing(config.current(), config.path()), "config": config.path()}


@op("doctor")
def check(call):
    """`env` and `cwd`: the environment and folder a job would be given (the CLI's own),
    so each agent is looked for where `roost run` would look for it; `cliVersion`: the
    CLI's, told against the daemon's. `roost`: roost's own checks (roost.ops.health).
    `screens`: instead, every job's recorded screens judged by its profile as it is now
    (roost.jobs.screen_drift)."""
    if read.flag(call.args, "screens"):
        call.services.timelines.flush()
        return screen_drift.drift(call.services.jobs.all(), call.services.config.current())
    env = read.mapping(call.args, "env", default={})
    if not all(isinstance(value, str) for value in env.values()):
        raise bad_request("env values must be strings")
    cwd = read.text(call.args, "cwd", default=None)
    cli_version = read.text(call.args, "cliVersion", default=None)
    config = call.services.config
    result = doctor.check_all(config.current(), config.path(), env, cwd)
    result["roost"] = health.check_roost(call.services, cli_version)
    return result
