"""The one place gevent's monkey patching happens (STYLE: "One monkey-patch site").

The daemon's entry calls `patch()` before it imports anything else; the frozen build's
runtime hook (packaging/rthook_gevent.py) calls it even earlier, when the process is
the daemon. The CLI's client path and roost_agent.py never come here: gevent costs
tens of milliseconds to import.
"""

_patched = False


def patch():
    """Patch the standard library for gevent, once; later calls do nothing.

    `os` stays unpatched: gevent 26 defers `os.close` to the next loop turn while
    ptyprocess closes its exec-error pipe and then blocks in a plain `os.read` for its
    EOF, so `pexpect.spawn` would hang forever. `signal` goes with `os` (gevent's
    patched `signal.signal` exists to route SIGCHLD to a patched `os`); roost installs
    no SIGCHLD handler of its own (STYLE traps).
    """
    global _patched
    if _patched:
        return
    from gevent import monkey

    monkey.patch_all(os=False, signal=False, subprocess=True)
    _patched = True


def is_patched():
    return _patched
