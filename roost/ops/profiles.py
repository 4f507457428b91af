"""roost's own ops on agent profiles: `profiles` (every profile a launch may name, and
where each comes from) and `doctor` (is each profile's agent there, at a version its
profile was checked on: roost.jobs.doctor)."""

from roost.contract import Anything, Choice, Flag, Integer, ListOf, MapOf, Shape, Text
from roost.jobs import doctor, screen_drift
from roost.jobs import profiles as agent_profiles
from roost.ops import health
from roost.ops import op

PROFILE = Shape({
    "name": Text(), "source": Text("The roost.json path, or \"built-in\"."),
    "replaces": Text("\"built-in\": a roost.json profile takes a built-in one's place.", optional=True),
    "error": Text("Why a launch of it is refused.", optional=True),
    "command": Anything("What it runs, expanded.", optional=True),
    "commandShown": ListOf(Text(), "The command as a person reads it.", optional=True), "task": Anything(optional=True),
    "protocol": Flag(optional=True),
    "title": Anything(optional=True), "resume": Anything(optional=True), "recordedOn": Anything(optional=True),
    "versionCommand": Anything(optional=True),
    "profile": Anything("The profile whole, as written.", optional=True),
}, name="ProfileEntry")
CHECK = Shape({"check": Text(), "verdict": Choice(("ok", "problem", "off")), "text": Text()}, name="RoostCheck")
AGENT_CHECK = Shape({
    "name": Text(), "source": Text(), "title": Text(nullable=True), "verdict": Text(), "program": Text(nullable=True),
    "path": Text(nullable=True), "version": Text(nullable=True), "recordedOn": ListOf(Anything()),
    "notes": ListOf(Text()),
}, name="ProfileCheck", open=True)
DRIFT = Shape({"id": Text(), "name": Text(), "at": Integer(nullable=True), "was": Anything(), "now": Anything(),
               "rule": Text(nullable=True), "line": Anything(nullable=True)}, name="ScreenChange")


@op("profiles", args={}, result={"profiles": ListOf(PROFILE), "config": Text("Where roost.json is read from.")})
def profiles(call):
    config = call.services.config
    return {"profiles": agent_profiles.listing(config.current(), config.path()), "config": config.path()}


@op("doctor", args={
    "screens": Flag("Instead: every job's recorded screens judged by its profile as it is now.", default=False),
    "env": MapOf(Text(), "The environment a job would be given (the CLI's own).", default={}),
    "cwd": Text("The folder a job would start in.", default=None),
    "cliVersion": Text("The CLI's version, told against the daemon's.", default=None),
}, result={
    "profiles": ListOf(AGENT_CHECK, optional=True), "roost": ListOf(CHECK, "roost's own checks.", optional=True),
    "replayed": Integer("With screens: the screens judged again.", optional=True),
    "changes": ListOf(DRIFT, "With screens: those read otherwise now.", optional=True),
})
def check(call):
    """`env` and `cwd`: the environment and folder a job would be given (the CLI's own),
    so each agent is looked for where `roost run` would look for it; `cliVersion`: the
    CLI's, told against the daemon's. `roost`: roost's own checks (roost.ops.health).
    `screens`: instead, every job's recorded screens judged by its profile as it is now
    (roost.jobs.screen_drift)."""
    if call.args["screens"]:
        call.services.timelines.flush()
        return screen_drift.drift(call.services.jobs.all(), call.services.config.current())
    env, cwd, cli_version = call.args["env"], call.args["cwd"], call.args["cliVersion"]
    config = call.services.config
    result = doctor.check_all(config.current(), config.path(), env, cwd)
    result["roost"] = health.check_roost(call.services, cli_version)
    return result
