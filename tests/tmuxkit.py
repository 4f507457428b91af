"""A real terminal for the tests that need a rendered screen: a tmux server of the
test's own (its socket in the test's home), one window running a command, keys typed
with `send-keys` and the screen read with `capture-pane -p`."""

import os
import shutil
import subprocess

from conftest import PYTHON, ROOT, wait_for

TMUX = shutil.which("tmux") or "/usr/bin/tmux"


class Tmux:
    def __init__(self, directory, env):
        self.socket = os.path.join(directory, "tmux.sock")
        self.env = dict(env)
        self.env.pop("TMUX", None)
        self.started = False

    def tmux(self, *args, check=True):
        return subprocess.run([TMUX, "-S", self.socket, *args], env=self.env, capture_output=True,
                              timeout=20, check=check)

    def start(self, argv, width=120, height=40, env=None):
        """`argv` in a new window of width x height; `env` set for it alone."""
        command = ["env", *(f"{key}={value}" for key, value in (env or {}).items()), *argv]
        self.tmux("-f", "/dev/null", "new-session", "-d", "-x", str(width), "-y", str(height),
                  "-s", "test", *command)
        self.tmux("set-option", "-w", "-t", "test", "remain-on-exit", "on")
        self.started = True
        return self

    def screen(self, escapes=False):
        args = ["capture-pane", "-p", "-t", "test"] + (["-e"] if escapes else [])
        return self.tmux(*args).stdout.decode("utf-8", "replace")

    def keys(self, *keys, literal=False):
        self.tmux("send-keys", "-t", "test", *(["-l"] if literal else []), *keys)

    def type(self, text):
        self.keys(text, literal=True)

    def resize(self, width, height):
        self.tmux("resize-window", "-t", "test", "-x", str(width), "-y", str(height))

    def size(self):
        out = self.tmux("display-message", "-p", "-t", "test", "#{pane_width}x#{pane_height}").stdout
        return out.decode().strip()

    def dead(self):
        out = self.tmux("display-message", "-p", "-t", "test", "#{pane_dead} #{pane_dead_status}", check=False)
        return out.stdout.decode().strip() if out.returncode == 0 else "gone"

    def wait_screen(self, predicate, timeout=10, what="the screen"):
        """Polls the screen until `predicate(text)`; the last screen in the failure."""
        last = []

        def check():
            last[:] = [self.screen()]
            return predicate(last[0])
        try:
            wait_for(check, timeout=timeout, interval=0.05, what=what)
        except AssertionError as error:
            raise AssertionError(f"{error}; the screen:\n{last[0] if last else ''}") from None
        return last[0]

    def wait_text(self, text, timeout=10):
        return self.wait_screen(lambda screen: text in screen, timeout, what=repr(text))

    def stop(self):
        if self.started:
            self.tmux("kill-server", check=False)
            self.started = False


HUB = [PYTHON, "-m", "roost", "hub"]


def start_hub(tmux, argv=HUB, width=120, height=40, **env):
    return tmux.start(argv, width, height, env={"PYTHONPATH": ROOT, "TERM": "xterm-256color", **env})
