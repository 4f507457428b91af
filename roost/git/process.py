"""One run of a program as a process of its own: posix_spawn, its pipes, its end.

Not `subprocess`: under the daemon's gevent patching `subprocess.Popen` forks in Python
and runs its child's set-up in Python before exec, which costs with the size of the
process (measured here: 7.4 ms for `git rev-parse` from a 60 MB process, against 1.3 ms
with posix_spawn, which vforks and stays flat; bench/git.py measures both in its
patched process). The daemon runs git several times per
board action, so that is most of what a land costs beyond git's own work.

What subprocess would have done for us, done here: the child's stdio are pipes (stdin
/dev/null unless given input) read and written through `selectors`, which gevent's
patching makes cooperative; every other fd the daemon holds is made close-on-exec
first (fds received over a unix socket are not); signals the daemon ignores are reset
to their defaults; the child leads a session of its own (no terminal; a timeout kills
its whole group). posix_spawn cannot set a umask, so the daemon's is swapped for the
user's around the spawn itself: microseconds, with no yield to another greenlet in
between, and the daemon's own files are written with explicit modes (store.py).

Its end: under gevent, libev reaps every child (waitpid(-1)), so the status comes from
a gevent child watcher, started before anything can yield (and SIGCHLD's handler put in
place before the spawn); a child left a zombie all the same is reaped by the wait
itself. Elsewhere, from waitpid once the child's pidfd says it ended.
"""

import os
import selectors
import shutil
import signal
import sys
import time

CHUNK = 65536
KILL_WAIT_S = 10.0
ZOMBIE_CHECK_S = 0.5     # how often a wait looks for a child that ended unheard
# Dispositions the daemon sets for itself (SIGHUP, SIGPIPE ignored) that exec would
# pass on: git must die of a broken pipe and a hangup as it would from a shell.
_DEFAULT_SIGNALS = (signal.SIGPIPE, signal.SIGHUP, signal.SIGINT, signal.SIGQUIT, signal.SIGTERM, signal.SIGXFSZ)

_programs = {}      # (name, PATH) -> the program's path


class Ended:
    """What a run left: its exit code (negative: the signal that ended it), its output,
    and whether the output was cut (`truncated`) or the run was killed at its deadline."""

    def __init__(self, returncode, stdout, stderr, truncated=False, timed_out=False):
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr
        self.truncated = truncated
        self.timed_out = timed_out


def find_program(name, env):
    """The path of `name` on the PATH of `env` (the user's), or None."""
    key = (name, env.get("PATH", os.defpath))
    if key not in _programs:
        found = shutil.which(name, path=key[1])
        if found is None:
            return None         # not remembered: it may be installed later
        _programs[key] = found
    return _programs[key]


def run(program, argv, env, timeout, input=None, max_output=None, umask=None):
    """Run `program` with `argv` and `env`; an Ended. A run past `timeout` seconds, or
    (with `max_output`) one whose stdout passes that many bytes, is killed with its
    group; what it wrote until then is kept."""
    return Running(program, argv, env, timeout, input, max_output, umask).finish()


class Running:
    """A started run: `finish()` feeds it, collects its output and waits for its end;
    `abandon()` kills it. Started runs go on together (a land checks the checkout
    while it reads its refs), each finished in turn."""

    def __init__(self, program, argv, env, timeout, input=None, max_output=None, umask=None):
        self.deadline = time.monotonic() + timeout
        self.input, self.max_output = input, max_output
        self.ends = []          # our ends of the pipes, closed whatever happens
        self.pid = None
        try:
            self.out_read, out_write = _pipe(self.ends)
            self.err_read, err_write = _pipe(self.ends)
            if input is None:
                in_read = _above_stdio(os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC), self.ends)
                self.in_write = None
            else:
                in_read, self.in_write = _pipe(self.ends)
            _seal_inherited_fds()
            actions = [(os.POSIX_SPAWN_DUP2, in_read, 0), (os.POSIX_SPAWN_DUP2, out_write, 1),
                       (os.POSIX_SPAWN_DUP2, err_write, 2)]
            self.ending = _Exit()
            previous = os.umask(umask) if umask is not None else None
            try:
                self.pid = os.posix_spawn(program, argv, env, file_actions=actions, setsid=True,
                                          setsigdef=_DEFAULT_SIGNALS)
            finally:
                if previous is not None:
                    os.umask(previous)
            self.ending.watch(self.pid)     # before anything yields: the reaper must find its watcher
            for fd in (in_read, out_write, err_write):
                _close(fd, self.ends)
        except BaseException:
            self._close_all()
            raise

    def finish(self):
        try:
            stdout, stderr, truncated, timed_out = _exchange(self.out_read, self.err_read, self.in_write, self.input,
                                                            self.deadline, self.max_output, self.ends)
            if truncated or timed_out:
                _kill_group(self.pid)
            returncode = self.ending.wait(self.deadline if not (truncated or timed_out)
                                          else time.monotonic() + KILL_WAIT_S)
            if returncode is None:
                timed_out = True
                _kill_group(self.pid)
                returncode = self.ending.wait(time.monotonic() + KILL_WAIT_S)
        except BaseException:
            self.abandon()
            raise
        finally:
            self._close_all()
        return Ended(returncode, stdout, stderr, truncated, timed_out)

    def abandon(self):
        """Kill it and forget it (reaped all the same)."""
        _kill_group(self.pid)
        self.ending.abandon()
        self._close_all()

    def _close_all(self):
        for fd in list(self.ends):
            _close(fd, self.ends)


def _pipe(ends):
    read_end, write_end = os.pipe()
    return _above_stdio(read_end, ends), _above_stdio(write_end, ends)


def _above_stdio(fd, ends):
    """`fd`, moved above 0-2 if it landed there (a process started with one of them
    closed), so a dup2 onto the child's stdio never meets itself."""
    if fd <= 2:
        moved = os.dup(fd)
        os.close(fd)
        fd = _above_stdio(moved, ends) if moved <= 2 else moved
        os.set_inheritable(fd, False)
    ends.append(fd)
    return fd


def _close(fd, ends):
    if fd in ends:
        ends.remove(fd)
        os.close(fd)


def _seal_inherited_fds():
    """Make every fd above stdio close-on-exec: posix_spawn passes on whatever is not,
    and a job's pty master in a long-lived hook would keep that terminal alive."""
    try:
        names = os.listdir("/proc/self/fd")
    except OSError:
        return
    for name in names:
        fd = int(name)
        if fd > 2:
            try:
                if os.get_inheritable(fd):
                    os.set_inheritable(fd, False)
            except OSError:
                pass            # the listing's own fd, closed since


def _exchange(out_read, err_read, in_write, data, deadline, max_output, ends):
    """Feed stdin and collect stdout and stderr until both close, the deadline passes
    or stdout passes `max_output`. Cooperative under gevent (selectors is patched)."""
    selector = selectors.DefaultSelector()
    collected = {out_read: bytearray(), err_read: bytearray()}
    pending = memoryview(data or b"")
    truncated = timed_out = False
    try:
        for fd in (out_read, err_read):
            os.set_blocking(fd, False)
            selector.register(fd, selectors.EVENT_READ)
        if in_write is not None:
            os.set_blocking(in_write, False)
            selector.register(in_write, selectors.EVENT_WRITE)
        while selector.get_map() and not truncated:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                timed_out = True
                break
            for key, _events in selector.select(remaining):
                if key.fd == in_write:
                    try:
                        pending = pending[os.write(in_write, pending[:CHUNK]):]
                    except BlockingIOError:
                        continue
                    except BrokenPipeError:
                        pending = pending[:0]       # it stopped reading: its answer says why
                    if not pending:
                        selector.unregister(in_write)
                        _close(in_write, ends)
                    continue
                try:
                    chunk = os.read(key.fd, CHUNK)
                except BlockingIOError:
                    continue
                if not chunk:
                    selector.unregister(key.fd)
                    continue
                collected[key.fd] += chunk
                if key.fd == out_read and max_output is not None and len(collected[out_read]) > max_output:
                    truncated = True
    finally:
        selector.close()
    return bytes(collected[out_read]), bytes(collected[err_read]), truncated, timed_out


def _kill_group(pid):
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _cooperative():
    monkey = sys.modules.get("gevent.monkey")
    return monkey is not None and monkey.is_module_patched("select")


class _Exit:
    """A child's exit status: from a gevent child watcher when the process is patched
    (libev's reaper takes every child's status, and hands it only to a watcher), else
    from waitpid."""

    def __init__(self):
        self.pid = None
        self.status = None
        self.watcher = None
        self.loop = None
        if _cooperative():
            import gevent
            from gevent.event import Event

            loop = gevent.get_hub().loop
            if not loop.default:
                # Only the main thread's loop reaps children: a run from the threadpool
                # would lose its status (roost/blocking.py says why git never runs there).
                raise RuntimeError("git must be run from the main thread under gevent, not from a pool thread")
            # Before the spawn: a child that ends before libev handles SIGCHLD would
            # end unheard (SIGCHLD's default is to be ignored) and never be reaped.
            loop.install_sigchld()
            self.loop = loop
            self.done = Event()

    def watch(self, pid):
        self.pid = pid
        if self.loop is not None:
            self.watcher = self.loop.child(pid, False)
            self.watcher.start(self._exited, self.watcher)

    def _exited(self, watcher):
        self.status = watcher.rstatus
        watcher.stop()
        self.done.set()

    def wait(self, deadline):
        """The exit code, or None when the deadline passed first."""
        if self.watcher is not None:
            while not self.done.wait(max(0.0, min(ZOMBIE_CHECK_S, deadline - time.monotonic()))):
                if self._reaped_unheard() or time.monotonic() >= deadline:
                    break
            return None if self.status is None else os.waitstatus_to_exitcode(self.status)
        # a pidfd turns readable when the child ends: waited on with a deadline, no polling
        pidfd = os.pidfd_open(self.pid)
        try:
            with selectors.DefaultSelector() as selector:
                selector.register(pidfd, selectors.EVENT_READ)
                if not selector.select(max(0.0, deadline - time.monotonic())):
                    return None
        finally:
            os.close(pidfd)
        return os.waitstatus_to_exitcode(os.waitpid(self.pid, 0)[1])

    def _reaped_unheard(self):
        """A child that ended while nobody was listening for SIGCHLD (a signal is lost
        when it comes while it is ignored) stays a zombie forever: reap it here rather
        than wait out the deadline. Racing libev's reaper is harmless: the loser gets
        ECHILD and the watcher still fires."""
        try:
            with open(f"/proc/{self.pid}/stat", "rb") as handle:
                if handle.read().rsplit(b")", 1)[1].split()[0] != b"Z":
                    return False
            pid, status = os.waitpid(self.pid, os.WNOHANG)
        except (OSError, IndexError):
            return False
        if not pid:
            return False
        self.status = status
        self.watcher.stop()
        return True

    def abandon(self):
        """The caller is going away (killed): reap what was killed, without waiting on
        it under gevent, where libev reaps it anyway."""
        if self.watcher is not None:
            self.watcher.stop()
            return
        try:
            os.waitpid(self.pid, 0)
        except ChildProcessError:
            pass
