"""The one seam through which roost.git runs blocking work: dulwich's reads of refs and
config, and reading a worktree's files to hash them.

dulwich is plain Python over plain files: under gevent each call would hold the event
loop for its whole length. The daemon calls `use_threadpool()` once, and from then on
that work runs on the hub's threadpool (as roost.store does with its fsyncs); elsewhere
(tests, benches, a script) it runs inline. Running git itself never comes here: its
wait is cooperative already (process.py), and a child's exit reaches only the main
thread's loop, so a git run must never start from the pool (process.py refuses it).
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
