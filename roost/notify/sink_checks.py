"""`roost doctor`'s word on the notification sinks (roost.notify.sinks): can each sink
that roost.json turns on reach the person from this daemon, as the daemon would send
it (its environment, the user's as roost.bundle.userenv gives it back)?"""

import os

from roost.bundle.userenv import user_environ
from roost.git import process
from roost.notify.notifier import Settings
from roost.notify.sinks import session_bus

OK, PROBLEM, OFF = "ok", "problem", "off"


def _check(name, verdict, text):
    return {"check": f"notify.{name}", "verdict": verdict, "text": text}


def _found(program, env):
    return program if os.sep in program and os.access(program, os.X_OK) else process.find_program(program, env)


def check_sinks(notify_config, env=None):
    """One check per sink: desktop, terminal, command."""
    settings = Settings(notify_config)
    env = user_environ(env)
    checks = []
    if not settings.desktop:
        checks.append(_check("desktop", OFF, "turned off in roost.json (notify.desktop)"))
    else:
        sender = _found("notify-send", env)
        if sender is None:
            checks.append(_check("desktop", PROBLEM, "notify-send is not on the daemon's PATH: no desktop "
                                                     "notification is shown (install libnotify's notify-send, "
                                                     "or set notify.desktop to false)"))
        elif not session_bus(env):
            checks.append(_check("desktop", PROBLEM, f"no session bus (DBUS_SESSION_BUS_ADDRESS, or "
                                                     f"$XDG_RUNTIME_DIR/bus): {sender} cannot reach a desktop"))
        else:
            checks.append(_check("desktop", OK, f"{sender}, with a session bus"))
    checks.append(_check("terminal", OK if settings.terminal else OFF,
                         "OSC 9 / OSC 777 and the bell in each hub's terminal" if settings.terminal
                         else "turned off in roost.json (notify.terminal)"))
    if settings.command is None:
        checks.append(_check("command", OFF, "no command set (notify.command: an argv list)"))
    else:
        program = _found(settings.command[0], env)
        if program is None:
            checks.append(_check("command", PROBLEM, f"{settings.command[0]} (notify.command) is not found: "
                                                     "its notifications are not sent"))
        else:
            checks.append(_check("command", OK, program))
    return checks

