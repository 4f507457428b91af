"""Join a job's live terminal: you see its screen (repainted on join) and your keys go
to it. Several people may attach to one job at once. Attaching to a job stopped for
idleness starts it again.

Usage:
  roost attach <id> [--detach-key=KEY]
  roost attach --help

Options:
  --detach-key=KEY  the key that detaches, as ^q or C-q (default: roost.json's
                    attach.detachKey, else ^q: Ctrl-q)
"""

import base64
import os
import select
import signal
import sys
import termios
import tty

from roost.cli.context import ExitStatus
from roost.client.connection import Lost, Unreachable
from roost.controls import visible

# Entering roost's own alternate screen keeps the person's shell screen intact; leaving
# it puts every mode a job may have set back as a shell expects it.
ENTER = b"\x1b[?1049h\x1b[H\x1b[2J"
LEAVE = (b"\x1b[<99u\x1b[>4m\x1b[?1l\x1b>\x1b[?2004l\x1b[?1000l\x1b[?1002l\x1b[?1003l"
         b"\x1b[?1006l\x1b[?1004l\x1b[0m\x1b[r\x1b[?25h\x1b[?1049l")


class BadKey(ValueError):
    pass


def parse_key(text):
    """`^q`, `C-q`, `ctrl-q` or `ctrl+q` -> (the byte it sends, the kitty keyboard form
    a terminal sends for it when a job turned that protocol on, its name)."""
    spec = text.strip()
    lowered = spec.lower()
    for prefix in ("^", "c-", "ctrl-", "ctrl+"):
        if lowered.startswith(prefix) and len(spec) == len(prefix) + 1:
            char = spec[-1]
            code = ord(char.upper()) ^ 0x40
            if not 0 <= code < 0x20:
                raise BadKey(f"{text!r} is not a control key")
            kitty = f"\x1b[{ord(char.lower())};5u".encode() if char.isalpha() else None
            return bytes([code]), kitty, f"Ctrl-{char.lower()}"
    if len(spec) == 1 and spec.isprintable():
        return spec.encode(), None, spec
    raise BadKey(f"{text!r} is not a key roost understands (try ^q or C-q)")


class _Session:
    """One attach: the connection to the daemon, the person's terminal, the wake pipe."""

    def __init__(self, client, job, fd_in, fd_out):
        self.client = client
        self.client.sock.settimeout(None)
        self.job = job
        self.fd_in = fd_in
        self.fd_out = fd_out
        self.detach_id = None

    def send(self, op, args):
        return self.client.send(op, args)

    def show(self, data):
        view = memoryview(data)
        while view:
            written = os.write(self.fd_out, view)
            view = view[written:]


def _window(fd):
    try:
        size = os.get_terminal_size(fd)
        return size.lines, size.columns
    except OSError:
        return None, None


def main(opts, ctx):
    fd_in = sys.stdin.fileno()
    fd_out = ctx.stdout.fileno() if hasattr(ctx.stdout, "fileno") else sys.stdout.fileno()
    key_text = opts["--detach-key"]
    if key_text is not None:
        try:
            parse_key(key_text)
        except BadKey as error:
            ctx.stderr.write(f"roost attach: {error}\n")
            return ExitStatus.USAGE
    if not os.isatty(fd_in):
        ctx.stderr.write("roost attach: standard input is not a terminal\n")
        return ExitStatus.USAGE
    rows, cols = _window(fd_out)
    args = {"id": opts["<id>"]}
    if rows and cols:
        args.update(rows=rows, cols=cols)
    client = ctx.client()
    try:
        try:
            response = client.request("attach", args)
        except Lost:
            raise Unreachable("the daemon closed the connection during attach")
        if not response.get("ok"):
            ctx.stderr.write(visible(f"roost: {response.get('code')}: {response.get('error')}") + "\n")
            return ExitStatus.REFUSED
        result = response["result"]
        try:
            key = parse_key(key_text or result.get("detachKey") or "^q")
        except BadKey:
            key = parse_key("^q")
        session = _Session(client, result, fd_in, fd_out)
        return _run(session, key, ctx)
    finally:
        client.close()


def _printable(text):
    """A name or reason as shown on the person's terminal: its control characters made
    visible, so none can smuggle an escape sequence in."""
    return visible(text)[:200]


def _run(session, key, ctx):
    job = session.job
    name = _printable(job["name"])
    hint = f"[roost] attached to {name} ({_printable(job['id'])}); detach with {key[2]}"
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_write, False)
    previous_winch = signal.signal(signal.SIGWINCH, lambda *_: _poke(wake_write))
    saved = termios.tcgetattr(session.fd_in)
    session.show(hint.encode() + b"\r\n")
    why = None
    try:
        tty.setraw(session.fd_in, termios.TCSANOW)
        session.show(ENTER + f"\x1b]2;roost: {name}\x07".encode())
        why = _pump(session, key, wake_read)
    finally:
        session.show(LEAVE)
        termios.tcsetattr(session.fd_in, termios.TCSADRAIN, saved)
        signal.signal(signal.SIGWINCH, previous_winch or signal.SIG_DFL)
        os.close(wake_read)
        os.close(wake_write)
    if why == "lost":
        ctx.stderr.write("roost attach: the daemon closed the connection\n")
        return ExitStatus.UNREACHABLE
    ctx.stderr.write(f"[roost] detached from {name}" + (f": {_printable(why)}" if why else "") + "\n")
    return ExitStatus.OK


def _poke(fd):
    try:
        os.write(fd, b"w")
    except OSError:
        pass


def _pump(session, key, wake_read):
    """Moves bytes both ways until a detach; returns why it ended (None: the key)."""
    job_id = session.job["id"]
    key_byte, key_kitty, _ = key
    hinted = False
    client = session.client
    pending = client.pending_events + client.take_messages()
    client.pending_events = []
    while True:
        for message in pending:
            if message.get("event") == "output" and message.get("id") == job_id:
                session.show(base64.b64decode(message["data"]))
                if not hinted:
                    hinted = True
                    _overlay_hint(session, key[2])
            elif message.get("event") == "detached" and message.get("id") == job_id:
                return message.get("why") or "detached"
            elif session.detach_id is not None and message.get("id") == session.detach_id:
                return None
        pending = []
        ready, _, _ = select.select([session.fd_in, client.sock, wake_read], [], [])
        if wake_read in ready:
            os.read(wake_read, 64)
            rows, cols = _window(session.fd_out)
            if rows and cols:
                session.send("attach-resize", {"id": job_id, "rows": rows, "cols": cols})
        if session.fd_in in ready:
            data = os.read(session.fd_in, 4096)
            if not data:
                return "standard input closed"
            cut = _find_key(data, key_byte, key_kitty)
            if cut is not None:
                data = data[:cut]
            if data:
                session.send("attach-input", {"id": job_id, "data": base64.b64encode(data).decode()})
            if cut is not None:
                session.detach_id = session.send("detach", {"id": job_id})
        if client.sock in ready:
            try:
                client.receive()
            except Lost:
                return "lost"
            pending = client.take_messages()


def _find_key(data, key_byte, key_kitty):
    found = [index for index in (data.find(key_byte),
                                 data.find(key_kitty) if key_kitty else -1) if index >= 0]
    return min(found) if found else None


def _overlay_hint(session, name):
    """Shows the detach key on the bottom row until the job draws there again."""
    rows, cols = _window(session.fd_out)
    if not rows:
        return
    text = f" detach: {name} "
    column = max(1, (cols or 80) - len(text) + 1)
    session.show(f"\x1b7\x1b[{rows};{column}H\x1b[7m{text}\x1b[0m\x1b8".encode())
