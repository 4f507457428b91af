"""A machine that restarted (issue 19 item 2): the daemon starts, its keeper is new, and
none of the jobs on record as running has a process left (a reboot, an OOM kill of the
lot). Each comes back the way it was launched, as the same job (its cwd, env, name,
profile, row history and reply book are its record's):

- a launch with `restart: "always"` (a dev server, a watcher) is started again with its
  own argv;
- a resumable one (its profile has `resume`) is started with its resume argv, which for
  an agent that keeps sessions by id names the job's own (`{sessionId}`, roost.jobs.
  sessions: given at launch, or found in the agent's session files), never another
  job's; one whose id was never found starts anew with its command;
- the others end `failed` with "the machine restarted" (one that had said it was
  `done` stays done), their last screen kept.

`autoResume: false` in roost.json, or in the job's profile, turns the resuming off.
"""

import logging

from roost import blocking
from roost.clock import now_ms
from roost.errors import RoostError
from roost.jobs import profiles, sessions
from roost.jobs.processes import jobs_with_processes

log = logging.getLogger(__name__)

MACHINE_RESTARTED = "the machine restarted"


def restarted(runner, unheld):
    """Whether the jobs in `unheld` (on record as running, not held by the keeper) were
    lost with the whole machine: the keeper is one this daemon started, and none of them
    has a process left."""
    if not unheld or not runner.keeper.started_here:
        return False
    alive = blocking.call(jobs_with_processes)
    return not any(job.id in alive for job in unheld)


def recover(runner, jobs):
    """Bring back each of `jobs` (see the module's docstring); the feed says what came
    back."""
    config = runner.config.current()
    counts = {"resumed": 0, "started again": 0, "failed": 0}
    for job in jobs:
        how = _how(job, config)
        if how is None:
            # One that had said it was done stays done; the others failed with the machine.
            state = "done" if job.state == "done" else "failed"
            runner.registry.move(job, "ended", state=state, pid=None, endedAt=now_ms(), status=None,
                                 waitingFor=None, error=MACHINE_RESTARTED)
            counts["failed"] += 1
            continue
        # Its run ended with the machine; the row keeps its state until the new run's.
        runner.registry.move(job, "ended", pid=None)
        try:
            runner.start(job, argv=how)
        except RoostError as error:
            log.warning("job %s could not be started again after the restart: %s", job.id, error.text)
            counts["failed"] += 1
            continue
        counts["started again" if how == job.launch.get("argv") else "resumed"] += 1
    shown = ", ".join(f"{count} {what}" for what, count in counts.items() if count)
    runner.registry.bus.publish("daemon", f"{MACHINE_RESTARTED}: {shown}")
    log.info("%s: %s", MACHINE_RESTARTED, shown)


def _how(job, config):
    """The argv that brings the job back, or None: it fails."""
    launch = job.launch
    if launch.get("restart") == "always":
        return launch.get("argv")
    if not job.live or not launch.get("resumable") or not launch.get("resumeCommand"):
        return None          # only what was at work or waiting is resumed
    if config.get("autoResume") is False:
        return None
    try:
        profile = profiles.find(config, launch["profile"]) if launch.get("profile") else {}
    except RoostError:
        profile = {}
    if isinstance(profile, dict) and profile.get("autoResume") is False:
        return None
    resume = sessions.resume_argv(launch)
    if resume is None:
        # No session of its own was ever found: nothing of it to resume, and never another's.
        log.info("job %s: no session of its agent's own was found: it starts anew", job.id)
        return launch.get("argv")
    return resume
