"""Each job's own conversation (issue 19 item 2): which session of its agent a job
resumes. The id is kept in one place, the job's launch record (`launch.sessionId` in
job.json, roost.jobs.record), and filled into the argv when the job is started again.

Two words in a profile's command and resume stand for what is the job's own:

- `{sessionId}`: the job's conversation id. When the command names it, roost draws one
  (a UUID) at dispatch and the agent takes it (Claude Code's `--session-id`, then
  `--resume`). When only the resume names it, the agent picks its own id and the
  profile's `sessionFrom` says where roost finds it.
- `{jobDir}`: the job's directory ($ROOST_HOME/jobs/<id>), which no other job shares:
  pi's `--session-dir`, aider's `--chat-history-file`.

`sessionFrom`, with a regular expression whose group `id` is the id:

- `{"openFile": REGEX}`: a file one of the job's processes holds open. Measured on Codex
  0.171.0: it creates `$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<uuid>.jsonl` at
  the first turn and keeps it open for the session's life. Two jobs started together
  in one cwd and one CODEX_HOME write two such files whose `session_meta` (cwd, start
  time) cannot tell them apart; the process that holds each open can, as every process
  of a job carries its identity (roost.jobs.processes).
- `{"newestFile": DIR, "pattern": REGEX}`: the newest file in DIR whose name matches.
  Measured on pi 0.73.1: it opens its session file only to append to it, so nothing
  holds it open; given a `--session-dir` of the job's own (`{jobDir}/...`), every file
  there is that job's.

The id is looked for whenever the row's status changes (a turn begins or ends) while
none is known, then at each turn's end (an agent that moves on to a new conversation,
Codex's `/new`, is followed); a look at open files walks /proc in the threadpool (~15 ms
with 300 processes, measured here). A new id goes into the launch record, then the job's
timeline (`session`) and the feed. A resume that names `{sessionId}` while none was
ever found is not run: the job starts anew with its command (no turn of it was seen,
so there is nothing of its own to resume, and another job's must never be taken).
"""

import logging
import os
import re
import uuid

import gevent

from roost import blocking
from roost.errors import bad_request
from roost.jobs import processes

log = logging.getLogger(__name__)

SESSION_ID = "{sessionId}"
JOB_DIR = "{jobDir}"
SOURCES = ("openFile", "newestFile")


def give(launch):
    """A launch whose command names `{sessionId}` gets an id of its own (a UUID, as
    Claude Code takes), put in its command and its resume alike. A resume that names
    it with nothing to provide it is refused."""
    argv, resume = launch.get("argv") or [], launch.get("resumeCommand") or []
    if SESSION_ID not in argv:
        if SESSION_ID in resume and not launch.get("sessionFrom"):
            # It could never be filled: every resume would start anew, silently.
            raise bad_request("the resume names {sessionId}, but neither the command (which would be given "
                              "one) nor a sessionFrom (where the agent's own is found) provides it")
        return
    session = launch["sessionId"] = str(uuid.uuid4())
    launch["argv"] = [session if item == SESSION_ID else item for item in argv]
    if resume:
        launch["resumeCommand"] = [session if item == SESSION_ID else item for item in resume]


def check_source(value, what):
    """A profile's `sessionFrom`, checked: a copy of it, or None."""
    if value is None:
        return None
    if not isinstance(value, dict) or len([key for key in SOURCES if key in value]) != 1:
        raise bad_request(f"{what} must be an object with one of {', '.join(SOURCES)}")
    pattern = value.get("openFile") if "openFile" in value else value.get("pattern")
    if "newestFile" in value and (not isinstance(value["newestFile"], str) or not value["newestFile"]):
        raise bad_request(f"{what}.newestFile must name a directory")
    if not isinstance(pattern, str):
        raise bad_request(f"{what} needs a regular expression (openFile, or newestFile's pattern)")
    try:
        compiled = re.compile(pattern)
    except re.error as error:
        raise bad_request(f"{what}: not a regular expression: {error}")
    if "id" not in compiled.groupindex:
        raise bad_request(f"{what}: the regular expression needs a group named id")
    return dict(value)


def fill(argv, job_dir, launch):
    """The argv with `{jobDir}` and `{sessionId}` made the job's own."""
    session = launch.get("sessionId")
    filled = []
    for item in argv:
        if item == SESSION_ID and session:
            item = session
        elif JOB_DIR in item:
            item = item.replace(JOB_DIR, job_dir)
        filled.append(item)
    return filled


def resume_argv(launch):
    """The argv that resumes the job's own conversation, or None: it has no resume, or
    its resume names a session id none was found for."""
    resume = launch.get("resumeCommand")
    if not resume or (SESSION_ID in resume and not launch.get("sessionId")):
        return None
    return resume


def find(source, job_id, job_dir):
    """(id, path) of the job's session as `source` (a `sessionFrom`) finds it, or None.
    Blocking: run it in the threadpool."""
    if "openFile" in source:
        pattern = re.compile(source["openFile"])
        found = {}
        for pid in processes.job_processes(job_id):
            found.update(_open_matches(pid, pattern))
    else:
        pattern = re.compile(source["pattern"])
        directory = source["newestFile"].replace(JOB_DIR, job_dir)
        try:
            names = os.listdir(directory)
        except OSError:
            return None
        found = {}
        for name in names:
            match = pattern.search(name)
            if match:
                found[os.path.join(directory, name)] = match.group("id")
    newest = None
    for path, session in found.items():
        try:
            changed = os.stat(path).st_mtime_ns
        except OSError:
            continue
        if newest is None or changed > newest[0]:
            newest = (changed, session, path)
    return None if newest is None else (newest[1], newest[2])


def _open_matches(pid, pattern):
    matches = {}
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return matches        # gone, or not ours
    for fd in fds:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        match = pattern.search(target)
        if match:
            matches[target] = match.group("id")
    return matches


class SessionFinder:
    """A registry listener: finds the session of each job whose launch has `sessionFrom`
    (see the module's docstring), one look per job at a time."""

    def __init__(self, registry, timelines):
        self.registry = registry
        self.timelines = timelines
        self._looking = {}          # job id -> whether to look again once this look ends

    def row_changed(self, after, before):
        if before is None or after.get("status") == before.get("status"):
            return
        job = self.registry.get(after["id"])
        if job is None or not job.launch.get("sessionFrom") or not job.speaks:
            return
        if job.launch.get("sessionId") and after.get("status") != "waiting":
            return
        if job.id in self._looking:
            self._looking[job.id] = True
            return
        self._looking[job.id] = False
        gevent.spawn(self._look, job)

    def _look(self, job):
        again = True
        while again:
            try:
                found = blocking.call(find, job.launch["sessionFrom"], job.id, job.job_dir)
            except Exception:
                log.exception("job %s: its session could not be looked for", job.id)
                found = None
            if found is not None and not job.removed and found[0] != job.launch.get("sessionId"):
                self.found(job, *found)
            again = self._looking.get(job.id, False)
            self._looking[job.id] = False
        self._looking.pop(job.id, None)

    def found(self, job, session, path):
        before = job.launch.get("sessionId")
        self.registry.change(job, launch=dict(job.launch, sessionId=session))
        log.info("job %s: its agent's session is %s (%s)", job.id, session, path)
        self.timelines.record(job, "session", id=session, file=path, before=before)
        text = f"its agent's session is {session}" + (f" (was {before})" if before else "")
        self.registry.bus.publish("session", text, job.id, job.name, sessionId=session)
