"""The daemon's log: $ROOST_HOME/daemon.log, rotated, never a terminal, never a token."""

import logging
import logging.handlers
import os
import sys

LOG_BYTES = 5 * 1024 * 1024
LOG_BACKUPS = 3


def setup(home, foreground=False, level=logging.INFO):
    path = os.path.join(home, "daemon.log")
    handler = logging.handlers.RotatingFileHandler(path, maxBytes=LOG_BYTES, backupCount=LOG_BACKUPS)
    formatter = logging.Formatter("%(asctime)s %(process)d %(levelname)s %(name)s: %(message)s")
    handler.setFormatter(formatter)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    if foreground:
        stream = logging.StreamHandler(sys.stderr)
        stream.setFormatter(formatter)
        root.addHandler(stream)
    return path
