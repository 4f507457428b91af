"""The kernel's word on a job's terminal (issue 27): whether its program waits for it
(roost.unix.terminal_waits), for the job's screen reading (roost.term.kernel_reading).

Asked of the keeper: reading another process's blocked call needs ptrace rights, which
under Yama's default (ptrace_scope 1) only an ancestor has, and the keeper is every
job's; the daemon is none's. A keeper before version 4 has no `probe`, and one that does
not answer in time (or has lost the job: a keeper started after it) is not waited for:
then the daemon reads /proc itself, and where it has no rights the evidence says
unknown. Each evidence says who read it (`by`: keeper or daemon).
"""

import logging

from roost.keeper.client import PROBES, KeeperError
from roost.unix.terminal_waits import UNKNOWN, Prober

log = logging.getLogger(__name__)


class Witness:
    def __init__(self, keeper):
        self.keeper = keeper
        self._here = None         # the daemon's own Prober, made when first needed
        self.asked = 0            # evidence given (bench/states)

    def for_run(self, job_id, pid, master):
        """The `probe()` of one run of a job: its program `pid` on the pty of `master`."""
        return lambda: self.probe(job_id, pid, master)

    def probe(self, job_id, pid, master):
        self.asked += 1
        if self.keeper.connected and isinstance(self.keeper.version, int) and self.keeper.version >= PROBES:
            try:
                evidence = self.keeper.probe(job_id)
            except KeeperError as error:
                log.info("job %s: the keeper did not probe it (%s); reading /proc here", job_id, error)
            else:
                if evidence is not None and evidence.get("verdict"):
                    evidence["by"] = "keeper"
                    return evidence
        try:
            if self._here is None:
                self._here = Prober()
            evidence = self._here.probe_master(pid, master)
        except OSError as error:
            log.info("job %s: its processes could not be read: %s", job_id, error)
            evidence = None
        if evidence is None:
            return {"verdict": UNKNOWN, "reason": "the kernel's word could not be had", "seen": [], "by": "daemon"}
        evidence["by"] = "daemon"
        return evidence
