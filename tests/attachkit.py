"""A person attached to a job's terminal, as `roost attach` is: the keys it sends and the
screen it reads."""

import base64
import time


def encoded(data):
    return base64.b64encode(data).decode()


class Attacher:
    """An attach on a raw connection: collects the output events."""

    def __init__(self, daemon, job_id, **size):
        self.client = daemon.client()
        self.job_id = job_id
        self.result = self.client.call("attach", {"id": job_id, **size})
        self.output = b""
        self.detached = None

    def pump_until(self, predicate, timeout=10, what="the output"):
        deadline = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}; got {self.output[-400:]!r}")
            self.client.sock.settimeout(max(0.01, deadline - time.monotonic()))
            try:
                event = self.client.next_event()
            except OSError:
                continue
            if event.get("event") == "output" and event["id"] == self.job_id:
                self.output += base64.b64decode(event["data"])
            elif event.get("event") == "detached" and event["id"] == self.job_id:
                self.detached = event["why"]

    def send(self, data):
        return self.client.call("attach-input", {"id": self.job_id, "data": encoded(data)})

    def close(self):
        self.client.close()
