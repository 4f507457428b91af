"""What the tests of honest states share (issue 27): a row's words, `explain`'s text, the
feed's state lines, and a daemon whose notifications go to files (notifykit)."""

import os

from conftest import DaemonProcess
from jobkit import write_config

# node's readline waits in epoll on its terminal among other files: roost cannot tell (?).
NODE_QUESTION = ("require('readline').createInterface({input: process.stdin, output: process.stdout})"
                 ".question('your colour? ', answer => { console.log('got ' + answer); setTimeout(() => {}, 60000) })")


def waiting(current):
    return current["state"] == "blocked" and current["status"] == "waiting"


def working(current):
    return current["state"] == "working" and current["status"] == "busy"


def explained(daemon, job_id):
    return daemon.call("explain", id=job_id)["text"]


def state_events(daemon, job_id):
    return [event["text"] for event in daemon.call("events", id=job_id, limit=1000)["events"]
            if event["kind"] == "state"]


def sh(script):
    return ["sh", "-c", script]


def started(home, sinks, config=None):
    os.makedirs(home, exist_ok=True)
    write_config(home, {"notify": {"command": sinks.command(), "desktop": False}, **(config or {})})
    return DaemonProcess(home, sinks.env).start()
