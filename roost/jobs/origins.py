"""Where a process runs: outside every job, or inside one (issue 16, the trust boundary;
issue 26: drawn by the kernel where it can).

A process is the person's only when it runs in the daemon's own PID namespace
(/proc/<pid>/ns/pid, which no process can leave): every jailed job has a namespace of
its own (roost.unix.bwrap), so any of its processes, however it forked, is inside a
job. Which job: the walk below from the first of its ancestors outside the jail (bwrap,
whose parent is the job's root).

For jobs that run without a jail the walk is all there is. The keeper is every job's
parent and a child subreaper, so whatever a job starts stays under it however it forks
or detaches (a double fork, setsid): a process runs inside a job exactly when it
descends from the keeper. Which job: the first running job's root
process met on the way up. A process whose parents are gone was reparented to the keeper
itself; then the job whose root leads its session, else roost cannot tell which. A
job's root also counts when the walk never meets the keeper (a keeper that died left its
jobs to init).

A keeper that died unasked left its jobs' processes to init: one of them alive then is
not the person either (roost.jobs.keeper_loss).

A process of a job launched as the person's own shell (`"person": true`) is the person's
as any process outside every job is.

The walk reads /proc/<pid>/stat once per process; the answers are kept per (pid, start
time), at most MAX_KNOWN of them, so a process that connects again, or one whose parent
was seen, costs one or two reads.
"""

from roost.unix.ancestry import pid_namespace, read_stat

MAX_KNOWN = 4096
# Deeper than any real tree: a bound, not a limit anyone meets.
_MAX_DEPTH = 256
_OUTSIDE = "outside"
_UNTRACED = "untraced"
_LEFT_BEHIND = "left behind"


class Inside:
    """A process inside a job: `job` is the Job, or None when roost cannot tell which."""

    __slots__ = ("job", "untraced", "jailed", "left_behind")

    def __init__(self, job, untraced=False, jailed=False, left_behind=False):
        self.job = job
        self.untraced = untraced    # its /proc entry could not be read: not the person either
        self.jailed = jailed        # in a PID namespace not the daemon's: a jail's
        self.left_behind = left_behind   # left to init when a keeper died (roost.jobs.keeper_loss)

    def describe(self):
        if self.job is not None:
            return f"a process of job {self.job.id} ({self.job.name})"
        if self.jailed:
            return "a process in a job's jail (roost cannot tell which job)"
        if self.left_behind:
            return ("a process left behind when roost's keeper died (it was alive then and is now init's: "
                    "roost doctor)")
        if self.untraced:
            return "a process roost could not trace (so it is not taken for the person)"
        return "a process inside a job (roost cannot tell which)"


class ProcessOrigins:
    """`place(pid)`: None for the person's processes, else Inside."""

    def __init__(self, registry, keeper_pid, max_known=MAX_KNOWN, losses=None):
        self.registry = registry
        self.keeper_pid = keeper_pid     # fn() -> the keeper's pid, or None while none runs
        self.losses = losses             # roost.jobs.keeper_loss.KeeperLosses, or None
        self.own_namespace = pid_namespace("self")
        self.max_known = max_known
        self._known = {}                 # (pid, start) -> job id, None (which job unknown) or _OUTSIDE
        self._roots = {}                 # root pid -> job id, of every job with a run
        self._roots_seen = -1            # registry.runs_moved when _roots was built

    def place(self, pid):
        stat = read_stat(pid)
        namespace = pid_namespace(pid)
        if stat is None or namespace is None:
            return Inside(None, untraced=True)
        if namespace != self.own_namespace:
            return self._jailed(stat)
        if self.losses is not None:
            self.losses.seen()
        found = self._known.get((pid, stat.start), _UNTRACED)
        if found is _UNTRACED:
            found = self._walk(stat)
        if found == _OUTSIDE:
            return None
        if found == _LEFT_BEHIND:
            return Inside(None, left_behind=True)
        job = self.registry.get(found) if found is not None else None
        if job is not None and job.launch.get("person"):
            return None
        return Inside(job)

    def _jailed(self, stat):
        """A process in another PID namespace: never the person. Its job is the one whose
        root its first ancestor in the daemon's namespace (its jail's bwrap) leads to."""
        for _ in range(_MAX_DEPTH):
            stat = read_stat(stat.parent)
            if stat is None:
                break
            if pid_namespace(stat.pid) == self.own_namespace:
                found = self._known.get((stat.pid, stat.start), _UNTRACED)
                if found is _UNTRACED:
                    found = self._walk(stat)
                job = self.registry.get(found) if found not in (_OUTSIDE, _LEFT_BEHIND, None) else None
                return Inside(job, jailed=True)
        return Inside(None, jailed=True)

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
                if self.losses is not None and self.losses.left_behind(stat):
                    found = _LEFT_BEHIND
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
