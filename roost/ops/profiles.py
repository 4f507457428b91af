"""roost's own ops on agent profiles: `profiles` (every profile a launch may name, and
where each comes from)."""

from roost.jobs import profiles as agent_profiles
from roost.ops import op


@op("profiles")
def profiles(call):
    config = call.services.config
    return {"profiles": agent_profiles.listing(config.current(), config.path()), "config": config.path()}
