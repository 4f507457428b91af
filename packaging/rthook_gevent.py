# PyInstaller runtime hook (roost.spec): runs in the frozen binary before roost's entry.
# The daemon's gevent patching must come before anything imports socket, threading or
# ssl, so it is done here, first; roost.daemon.patching.patch() is idempotent and stays the one
# place that patches (STYLE "One monkey-patch site"). Only the daemon itself is patched
# (`roost daemon --foreground`, as roost/__main__.py routes it): every other subcommand,
# `roost daemon` that merely starts one included, is a short client that must not pay
# for importing gevent.
import sys

if sys.argv[1:2] == ["daemon"] and "--foreground" in sys.argv[2:]:
    import roost.daemon.patching

    roost.daemon.patching.patch()
