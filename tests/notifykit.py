"""The notification sinks of a test daemon, as files a test reads: a fake `notify-send`
on PATH that logs its argv, and a command sink that logs each notification it is given."""

import json
import os

from conftest import PYTHON

FAKE_NOTIFY_SEND = """#!{python}
import json, os, sys
with open(os.environ["FAKE_NOTIFY_LOG"], "a") as handle:
    handle.write(json.dumps(sys.argv[1:]) + "\\n")
"""
COMMAND_SINK = """import sys
note = sys.stdin.read()
with open(sys.argv[1], "a") as handle:
    handle.write(note if note.endswith("\\n") else note + "\\n")
"""


class Sinks:
    """The two files the sinks write: notify-send's argv lists and the command's notes."""

    def __init__(self, base):
        self.desktop_log = os.path.join(base, "desktop.log")
        self.command_log = os.path.join(base, "command.log")
        bin_dir = os.path.join(base, "bin")
        os.makedirs(bin_dir)
        fake = os.path.join(bin_dir, "notify-send")
        with open(fake, "w") as handle:
            handle.write(FAKE_NOTIFY_SEND.format(python=PYTHON))
        os.chmod(fake, 0o755)
        self.command_script = os.path.join(base, "command_sink.py")
        with open(self.command_script, "w") as handle:
            handle.write(COMMAND_SINK)
        self.env = {"PATH": bin_dir + os.pathsep + os.environ["PATH"], "FAKE_NOTIFY_LOG": self.desktop_log,
                    "DBUS_SESSION_BUS_ADDRESS": "unix:path=/nonexistent-test-bus"}

    def command(self):
        return [PYTHON, self.command_script, self.command_log]

    @staticmethod
    def _lines(path):
        try:
            with open(path) as handle:
                return [json.loads(line) for line in handle if line.strip()]
        except FileNotFoundError:
            return []

    def desktop(self):
        return self._lines(self.desktop_log)

    def notes(self):
        return self._lines(self.command_log)
