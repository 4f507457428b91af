"""A protocol agent that reports twice and ends without close(): roost_agent's at-exit
close must still get the last report through."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import roost_agent  # noqa: E402

agent = roost_agent.RoostAgent.from_env("proto-no-close")
if agent is not None:
    agent.report("working", summary="starting")
    agent.report("done", summary="finished without close()")
