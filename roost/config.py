"""roost.json: the user's configuration (CONTRACT.md "Agent profiles"). Unknown keys are
kept and ignored; a file that does not parse is reported, not replaced."""

import logging
import os

from roost import codec, paths

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


class Config:
    """The daemon's view of roost.json: read when it changed, at the moment it is asked."""

    def __init__(self, home):
        self.home = home
        self._value = None
        self._stamp = None

    def path(self):
        """Where roost.json is read from (it may not exist)."""
        # Only what config_file reads: a copy of the whole environment cost tens of µs,
        # and this is asked at each row change (the reaper's setting).
        return paths.config_file({"ROOST_HOME": self.home, "XDG_CONFIG_HOME": os.environ.get("XDG_CONFIG_HOME")})

    def current(self):
        self._value, self._stamp = load(self.path(), self._value, self._stamp)
        return self._value

    def get(self, key, default=None):
        return self.current().get(key, default)

    def positive(self, key, default):
        """A number above 0 roost.json gives for `key`, else `default`."""
        value = self.get(key)
        return value if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0 else default
