"""roost.json: the user's configuration (CONTRACT.md "Agent profiles"). Unknown keys are
kept and ignored; a file that does not parse is reported, not replaced."""

import logging
import os

from roost import codec

log = logging.getLogger(__name__)


def load(path, previous=None, previous_stamp=None):
    """(config, stamp): the parsed file, re-read only when its mtime or size changed."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return {}, None
    stamp = (info.st_mtime_ns, info.st_size)
    if previous is not None and stamp == previous_stamp:
        return previous, stamp
    try:
        with open(path, "rb") as handle:
            value = codec.decode(handle.read())
        if not isinstance(value, dict):
            raise ValueError("not a JSON object")
    except (OSError, ValueError) as error:
        log.error("%s cannot be read (%s); using the previous configuration", path, error)
        return (previous or {}), stamp
    return value, stamp
