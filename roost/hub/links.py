"""The hub's daemons: this machine's alone, or several machines' (`--host`, roost.json's
`hosts`; `local` is this machine). Each is a Link: its connection while it is up, and
while it is down why, since when and when it is tried again (backoff, doubling to a
minute). With several, a row's id is made unique across machines (`HOST:ID`) and the
row says its host; what the person does to a row goes to its host with the job's own id."""

import time

from roost.controls import visible

RETRY_FIRST_S = 1.0
RETRY_MOST_S = 60.0


def tagged_id(host, job_id):
    return f"{host}:{job_id}"


class Link:
    def __init__(self, name, opener, tagged, client=None):
        self.name = name
        self.opener = opener          # () -> a new Client of this machine's daemon
        self.tagged = tagged          # several machines: rows carry their host
        self.client = client
        self.why = None               # why it is down (None: up, or not tried yet)
        self.down_since = None
        self.retry_at = 0.0
        self.backoff = RETRY_FIRST_S
        self.focus = False            # the job told to this daemon as looked at
        self.connecting = None        # (the subscribe's request id, until when it may take)

    # -- up and down ------------------------------------------------------------------

    def open(self):
        if self.client is None:
            self.client = self.opener()
        return self.client

    def lost(self, why, now=None):
        now = time.monotonic() if now is None else now
        if self.client is not None:
            self.close(abandon=True)
            why = _last_said(self.client) or why
        self.client = None
        self.focus = False
        self.connecting = None
        if self.down_since is None:
            self.down_since = time.time()
        self.why = why
        self.retry_at = now + self.backoff
        self.backoff = min(RETRY_MOST_S, self.backoff * 2)

    def close(self, abandon=False):
        """`abandon`: the connection is given up (lost, or never answered), so the command
        carrying it is ended at once rather than waited for."""
        if self.client is None:
            return
        process = self.client.process
        if (abandon or self.connecting is not None) and process is not None and process.poll() is None:
            process.terminate()
        try:
            self.client.close()
        except OSError:
            pass

    def up(self):
        self.why = None
        self.down_since = None
        self.backoff = RETRY_FIRST_S

    def due(self, now):
        return self.client is None and now >= self.retry_at

    def state_text(self):
        if self.connecting is not None and self.down_since is None:
            return f"{self.name} connecting"
        if self.client is not None and self.connecting is None:
            return f"{self.name} up"
        since = time.strftime("%H:%M:%S", time.localtime(self.down_since)) if self.down_since else ""
        return f"{self.name} DOWN since {since} ({self.why}; trying again)"

    # -- what its daemon says, as the hub keeps it ------------------------------------

    def row(self, row):
        if not self.tagged:
            return row
        return {**row, "id": tagged_id(self.name, row["id"]), "jobId": row["id"], "host": self.name}

    def event(self, entry):
        if not self.tagged:
            return entry
        return {**entry, "name": f"{self.name}:{entry.get('name') or 'roost'}"}

    def tasks(self, tasks):
        """The board's tasks, their owners' ids as the rows' (the ranking matches them)."""
        if not self.tagged or tasks is None:
            return tasks
        result = []
        for task in tasks:
            owner = task.get("owner")
            if isinstance(owner, dict) and owner.get("id"):
                task = {**task, "owner": {**owner, "id": tagged_id(self.name, owner["id"])}}
            result.append(task)
        return result

    def message(self, message):
        """A push of its daemon, its ids made the hub's."""
        if not self.tagged:
            return message
        kind = message.get("event")
        if kind == "rows":
            return {**message, "rows": [self.row(row) for row in message.get("rows") or ()]}
        if kind == "removed":
            return {**message, "id": tagged_id(self.name, message.get("id"))}
        if kind == "feed":
            return {**message, "entry": self.event(message.get("entry") or {})}
        if kind == "notify":
            note = dict(message.get("note") or {})
            note["title"] = f"{self.name}: {note.get('title') or 'roost'}"
            return {**message, "note": note}
        return message


def _last_said(client):
    """The last line ssh wrote on its stderr (kept in a file, off the screen): why it
    could not connect, or why the connection ended."""
    said = getattr(client, "said", None)
    if said is None:
        return None
    try:
        said.seek(0)
        lines = [line.strip() for line in said.read()[-2000:].decode("utf-8", "replace").splitlines()]
        said.close()
    except (OSError, ValueError):
        return None
    lines = [line for line in lines if line]
    return visible(lines[-1])[:200] if lines else None


def job_id_of(row):
    """The job's own id on its machine."""
    return row.get("jobId") or row["id"]
