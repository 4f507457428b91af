"""The one seam through which roost runs blocking work off the event loop: the store's
writes and fsyncs (roost.store), dulwich's reads of refs and config and the reading of a
worktree's files to hash them (roost.git).

Under gevent each such call would hold the event loop for its whole length (a slow disk,
a large tree). The daemon calls `use_threadpool()` once, and from then on that work runs
on the hub's threadpool; elsewhere (the keeper, the CLI, tests, benches) it runs inline.
Running git itself never comes here: its wait is cooperative already
(roost.git.process), and a child's exit reaches only the main thread's loop, so a git
run must never start from the pool (process.py refuses it).
"""

_run = None      # set by use_threadpool(); None: call inline


def use_threadpool():
    """Route blocking work through gevent's threadpool (the daemon only)."""
    global _run
    import gevent

    pool = gevent.get_hub().threadpool

    def run(fn, *args):
        return pool.apply(fn, args)

    _run = run


def call(fn, *args):
    """fn(*args), off the event loop when the daemon turned the threadpool on."""
    if _run is None:
        return fn(*args)
    return _run(fn, *args)


def start(fn, *args):
    """fn(*args) on the threadpool, not waited for (the daemon's chores at start)."""
    if _run is None:
        fn(*args)
        return
    import gevent

    gevent.get_hub().threadpool.spawn(fn, *args)
