"""Where a process runs: outside every job, or inside one (issue 16, the trust boundary).

The keeper is every job's parent and a child subreaper, so whatever a job starts stays
under it however it forks or detaches (a double fork, setsid): a process runs inside a
job exactly when it descends from the keeper. Which job: the first running job's root
process met on the way up. A process whose parents are gone was reparented to the keeper
itself; then the job whose root leads its session, else roost cannot tell which. A
job's root also counts when the walk never meets the keeper (a keeper that died left its
jobs to init).

A process of a job launched as the person's own shell (`"person": true`) is the person's
as any process outside every job is.

The walk reads /proc/<pid>/stat once per process; the answers are kept per (pid, start
time), at most MAX_KNOWN of them, so a process that connects again, or one whose parent
was seen, costs one or two reads.
"""

from roost.unix.ancestry import read_stat

MAX_KNOWN = 4096
# Deeper than any real tree: a bound, not a limit anyone meets.
_MAX_DEPTH = 256
_OUTSIDE = "outside"
_UNTRACED = "untraced"


class Inside:
    """A process inside a job: `job` is the Job, or None when roost cannot tell which."""

    __slots__ = ("job", "untraced")

    def __init__(self, job, untraced=False):
        self.job = job
        self.untraced = untraced    # its /proc entry could not be read: not the person either

    def describe(self):
        if self.job is not None:
            return f"a process of job {self.job.id} ({self.job.name})"
        if self.untraced:
            return "a process roost could not trace (so it is not taken for the person)"
        return "a process inside a job (roost cannot tell which)"


class ProcessOrigins:
    """`place(pid)`: None for the person's processes, else Inside."""

    def __init__(self, registry, keeper_pid, max_known=MAX_KNOWN):
        self.registry = registry
        self.keeper_pid = keeper_pid     # fn() -> the keeper's pid, or None while none runs
        self.max_known = max_known
        self._known = {}                 # (pid, start) -> job id, None (which job unknown) or _OUTSIDE
        self._roots = {}                 # root pid -> job id, of every job with a run
        self._roots_seen = -1            # registry.runs_moved when _roots was built

    def place(self, pid):
        stat = read_stat(pid)
        if stat is None:
            return Inside(None, untraced=True)
        found = self._known.get((pid, stat.start), _UNTRACED)
        if found is _UNTRACED:
            found = self._walk(stat)
        if found == _OUTSIDE:
            return None
        job = self.registry.get(found) if found is not None else None
        if job is not None and job.launch.get("person"):
            return None
        return Inside(job)

    def _walk(self, stat):
        """The answer for a process not known yet: up its parents until one is known, a
        job's root, the keeper, or init."""
        keeper = self.keeper_pid()
        roots = self._job_roots()
        seen = []
        found = _OUTSIDE
        first = stat
        while stat is not None and len(seen) < _MAX_DEPTH:
            known = self._known.get((stat.pid, stat.start), _UNTRACED)
            if known is not _UNTRACED:
                found = known
                break
            if stat.pid == keeper:
                # Reparented to the keeper (its parents are gone): its session may tell.
                found = self._running_job(roots, first.session)
                break
            job_id = self._running_job(roots, stat.pid)
            seen.append((stat.pid, stat.start))
            if job_id is not None:
                found = job_id
                break
            if stat.parent <= 1:
                break
            stat = read_stat(stat.parent)
        self._remember(seen, found)
        return found

    def _running_job(self, roots, pid):
        job_id = roots.get(pid)
        if job_id is None:
            return None
        job = self.registry.get(job_id)
        # A root pid counts only while its run lasts (the keeper has not reaped it).
        return job_id if job is not None and job.run.active and job.run.pid == pid else None

    def _job_roots(self):
        moved = self.registry.runs_moved
        if moved != self._roots_seen:
            self._roots = {job.run.pid: job.id for job in self.registry.all() if job.run.pid}
            self._roots_seen = moved
        return self._roots

    def _remember(self, seen, found):
        known = self._known
        for key in seen:
            if len(known) >= self.max_known:
                # Oldest first (dicts keep their order): a bound, not an LRU.
                del known[next(iter(known))]
            known[key] = found
