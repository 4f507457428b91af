"""What roost decided about a job, kept where no job writes (issue 26 item 3):
`$ROOST_HOME/private/<id>.json` (0600, in a 0700 directory that jails never see).

A job may write its own directory (`ROOST_JOB_DIR`: agent.json, its agent's sessions),
so job.json is no place for what must not change at the job's say: its token (which
proves a connection speaks for it), whether it is the person's own shell, whether it
may run without a jail, and the folder and profile its jail is made for. Those are kept
here, and what job.json says of them is overridden on load.

Jobs recorded before (their token in job.json) are moved here when a daemon loads them:
an adopted job keeps its token, and so the agent that holds it keeps working.
"""

import logging
import os

from roost import store
from roost.keeper import admission

log = logging.getLogger(__name__)

DIRECTORY = admission.PRIVATE      # the keeper's secret is kept there too
VERSION = 1


class Trusted:
    def __init__(self, home):
        self.directory = os.path.join(home, DIRECTORY)

    def _path(self, job_id):
        return os.path.join(self.directory, f"{job_id}.json")

    def read(self, job_id):
        return store.read_json(self._path(job_id))

    def write(self, job_id, token, launch, fields):
        """The trusted record of a new job (or of one moved here), durably."""
        store.make_private_dir(self.directory)
        trusted = {"version": VERSION, "token": token, "person": bool(launch.get("person")),
                   "sandbox": launch.get("sandbox") is not False, "cwd": fields.get("cwd"),
                   "profile": launch.get("profile")}
        store.write_json(self._path(job_id), trusted)
        return trusted

    def remove(self, job_id):
        try:
            os.unlink(self._path(job_id))
        except FileNotFoundError:
            pass

    def load(self, record):
        """The token of the job whose job.json `record` is, its record set right from
        what is kept here (a record from before: its token moved here). None when it has
        no token anywhere. Returns (token, changed: job.json must be written again)."""
        job_id = record["id"]
        launch = record.setdefault("launch", {})
        trusted = self.read(job_id)
        changed = "token" in record
        if not isinstance(trusted, dict) or not trusted.get("token"):
            if not record.get("token"):
                return None, False
            trusted = self.write(job_id, record["token"], launch, record)
            log.info("job %s: its token moved out of job.json", job_id)
        record.pop("token", None)
        wanted = {"cwd": trusted.get("cwd")}
        for key, value in wanted.items():
            if value is not None and record.get(key) != value:
                log.warning("job %s: job.json says %s %r, roost's own record %r: %s kept", job_id, key,
                            record.get(key), value, value)
                record[key] = value
                changed = True
        person = bool(trusted.get("person"))
        if bool(launch.get("person")) != person or bool(record.get("person")) != person:
            log.warning("job %s: job.json says person %s, roost's own record %s: kept", job_id,
                        launch.get("person"), person)
            changed = True
        launch["person"] = person
        if person:
            record["person"] = True
        else:
            record.pop("person", None)
        sandbox = trusted.get("sandbox") is not False
        if (launch.get("sandbox") is not False) != sandbox:
            changed = True
        if sandbox:
            launch.pop("sandbox", None)
        else:
            launch["sandbox"] = False
        if trusted.get("profile") is not None and launch.get("profile") != trusted["profile"]:
            launch["profile"] = trusted["profile"]
            changed = True
        return trusted["token"], changed
