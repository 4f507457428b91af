"""Sessions that speak for their jobs (speak_for), lead jobs to message, agents that take
items, and what reached them (their reply book, their messages)."""

import json
import os

from jobkit import dispatch, job_token
from protokit import start
from roost.jobs.reply_book import read_book


def speaker(daemon, job_id):
    """A connection that speaks for a job, as any process of it may (speak_for)."""
    client = daemon.client()
    client.call("speak_for", {"id": job_id, "token": job_token(daemon.home, job_id)})
    return client


def lead(daemon, name="lead", parent=None):
    """A job that sleeps: a session the test speaks for; `parent`: spawned by that one."""
    if parent is None:
        return dispatch(daemon, ["sleep", "300"], name=name)
    with speaker(daemon, parent) as client:
        return client.call("spawn", {"launch": {"kind": "shell", "cwd": "/tmp", "command": ["sleep", "300"],
                                                "env": {}, "name": name, "sessionFile": "", "origin": "bg"}})["id"]


def messages(job):
    try:
        with open(os.path.join(job.dir, "messages.jsonl"), encoding="utf-8") as handle:
            return [json.loads(line) for line in handle]
    except FileNotFoundError:
        return []


def book(job_dir):
    """What waits in a job's reply book, as it is on disk."""
    return read_book(job_dir)["pending"]


def items_agent(daemon, name="helper", hold=False):
    env = {"PROTO_MESSAGES": "1"}
    if hold:
        env["PROTO_HOLD_MESSAGES"] = "1"
    job = start(daemon, "recorder", env=env)
    daemon.call("rename", id=job.id, name=name)
    job.wait_row(lambda current: "agent-items" in (current.get("capabilities") or []), "the agent's hello")
    return job


def waiting(current):
    return current["state"] == "blocked" and current["status"] == "waiting"
