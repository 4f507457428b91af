"""Where a notification goes, each sink optional (roost.json's `notify`):

    desktop   `notify-send TITLE BODY` when a session bus exists (DBUS_SESSION_BUS_ADDRESS,
              or $XDG_RUNTIME_DIR/bus); on by default
    terminal  a `notify` push to the subscribed hubs, which write OSC 9, OSC 777 and the
              bell to their own terminal; on by default
    command   an argv list of the user's, the notification as JSON on its stdin (ntfy, a
              chat bot, a phone); off unless set

Each runs apart from the others and from the caller: a sink that hangs or fails is
logged and cut after SINK_TIMEOUT_S, never felt by a job or an op.
"""

import logging
import os

from roost import codec
from roost.bundle.userenv import user_environ
from roost.git import process

log = logging.getLogger(__name__)

SINK_TIMEOUT_S = 10.0


def session_bus(env):
    if env.get("DBUS_SESSION_BUS_ADDRESS"):
        return True
    runtime = env.get("XDG_RUNTIME_DIR")
    return bool(runtime) and os.path.exists(os.path.join(runtime, "bus"))


def desktop(note, env=None):
    """notify-send; (ok, why not)."""
    env = user_environ(env)
    if not session_bus(env):
        return False, "no session bus (DBUS_SESSION_BUS_ADDRESS)"
    urgency = "critical" if note["kind"] in ("question", "dialog") else "normal"
    # `--`: a title or body that starts with "-" (a session's name, an agent's words) is
    # text, never an option of notify-send's
    argv = ["notify-send", "--app-name=roost", f"--urgency={urgency}", "--", note["title"], note["body"]]
    return _run(argv, None, env)


def command(note, argv, env=None):
    """The user's command, the notification as JSON on its stdin; (ok, why not)."""
    if not argv:
        return False, "no command set"
    return _run(list(argv), codec.encode(note) + b"\n", user_environ(env))


def _run(argv, stdin, env):
    program = argv[0] if os.sep in argv[0] else process.find_program(argv[0], env)
    if program is None or not os.path.exists(program):
        return False, f"{argv[0]} not found"
    try:
        result = process.run(program, argv, env, SINK_TIMEOUT_S, input=stdin, max_output=65536)
    except OSError as error:
        return False, f"{argv[0]}: {error}"
    if result.timed_out:
        return False, f"{argv[0]} did not finish within {SINK_TIMEOUT_S:g} s"
    if result.returncode != 0:
        why = (result.stderr or b"").decode("utf-8", "replace").strip()[:200]
        return False, f"{argv[0]} exited with status {result.returncode}" + (f": {why}" if why else "")
    return True, None


def terminal_push(note):
    """The push the hubs get; they turn it into OSC 9 / OSC 777 and a bell."""
    return {"event": "notify", "note": note}
