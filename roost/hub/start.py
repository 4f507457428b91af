"""Starting the hub in the person's terminal: curses set up and put back, the resize
signal turned into a wake-up of the hub's loop, and the groups printed once as text on
a terminal that cannot draw a screen."""

import curses
import locale
import os
import signal

from roost.clock import now_ms
from roost.hub import views
from roost.hub.actions import DaemonLost
from roost.hub.app import Hub
from roost.hub.screen import Painter, plain_wanted


def _can_draw():
    """A terminal that cannot move its cursor (TERM=dumb, unknown) gets the groups as text."""
    try:
        curses.setupterm()
    except curses.error:
        return False
    return bool(curses.tigetstr("cup"))


def _print_once(links):
    hub = Hub(links, None, None)
    try:
        hub.machines.start()
    except DaemonLost as error:
        return f"the daemon closed the connection ({error})"
    text = "\n".join(views.plain_lines(hub.fleet, now_ms()))
    os.write(1, (text + "\n(this terminal cannot draw the hub's screen: the jobs as they are now)\n").encode())
    return None


def run(links, env):
    """The hub until the person quits, on its machines (roost.hub.links); None, or why it
    ended (the daemon was lost: with machines named, one that drops is tried again)."""
    locale.setlocale(locale.LC_ALL, "")
    if not _can_draw():
        return _print_once(links)
    plain = plain_wanted(env, locale.getpreferredencoding(False))
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_write, False)
    previous = signal.getsignal(signal.SIGWINCH)

    def poke(*_):
        try:
            os.write(wake_write, b"w")
        except OSError:
            pass

    stdscr = None
    try:
        # Not curses.wrapper: it starts colours, which NO_COLOR must not get.
        stdscr = curses.initscr()
        curses.noecho()
        curses.cbreak()
        curses.set_escdelay(25)
        stdscr.nodelay(True)
        stdscr.keypad(True)
        signal.signal(signal.SIGWINCH, poke)      # after initscr: curses' own handler is replaced
        Hub(links, stdscr, Painter(stdscr, plain)).run(wake_read)
        return None
    except DaemonLost as error:
        return f"the daemon closed the connection ({error})"
    finally:
        if stdscr is not None:
            os.write(1, b"\x1b[?1004l")
            stdscr.keypad(False)
            curses.echo()
            curses.nocbreak()
            curses.endwin()
        signal.signal(signal.SIGWINCH, previous or signal.SIG_DFL)
        os.close(wake_read)
        os.close(wake_write)
