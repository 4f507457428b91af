"""The concierge's job turned on and a session that speaks for it."""

from jobkit import agent
from protokit import token_of


def launch(command, **extra):
    return {"kind": "shell", "cwd": "/tmp", "command": command, "env": {}, "name": "", "sessionFile": "",
            "origin": "dispatch", **extra}


def turn_on(daemon, command=None):
    status = daemon.call("concierge", action="on", launch=launch(command or agent("cli_concierge.py")))
    assert status["on"] is True
    return status["id"]


class Speaker:
    """A connection that speaks for a job (a process of that job, as its shell tool)."""

    def __init__(self, daemon, job_id):
        self.client = daemon.client()
        self.client.call("speak_for", {"id": job_id, "token": token_of(daemon, job_id)})

    def request(self, op, **args):
        return self.client.request(op, args)

    def call(self, op, **args):
        answer = self.request(op, **args)
        assert answer["ok"], (op, answer)
        return answer.get("result") or {}

    def close(self):
        self.client.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
