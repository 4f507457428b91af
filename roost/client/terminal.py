"""A person's terminal joined to a job's (`attach`): raw mode, roost's own alternate
screen, the pump that moves bytes both ways and the detach key. `roost attach` and the
hub share it, so attaching from the hub and coming back is one code path. Standard
library only (the client layer never imports gevent)."""

import base64
import os
import select
import signal
import termios
import tty

from roost.client.connection import Lost
from roost.controls import visible

# Entering roost's own alternate screen keeps the person's shell screen intact; leaving
# it puts every mode a job may have set back as a shell expects it.
ENTER = b"\x1b[?1049h\x1b[H\x1b[2J"
LEAVE = (b"\x1b[<99u\x1b[>4m\x1b[?1l\x1b>\x1b[?2004l\x1b[?1000l\x1b[?1002l\x1b[?1003l"
         b"\x1b[?1006l\x1b[?1004l\x1b[0m\x1b[r\x1b[?25h\x1b[?1049l")

LOST = "lost"


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


def printable(text, limit=200):
    """A name or reason as shown on the person's terminal: its control characters made
    visible, so none can smuggle an escape sequence in."""
    return visible(str(text))[:limit]


def window(fd):
    try:
        size = os.get_terminal_size(fd)
        return size.lines, size.columns
    except OSError:
        return None, None


class Refusal(Exception):
    """The daemon refused the attach (its code and text)."""

    def __init__(self, code, text):
        super().__init__(f"{code}: {text}")
        self.code = code
        self.text = text


class AttachSession:
    """One attach on a connection of the caller's (`client`, blocking): the person's
    terminal (fd_in, fd_out) joined to job `job_id`. `on_other(message)` gets what the
    connection carries that is not this attach's (a hub's pushes), so nothing is lost
    while the person is attached."""

    def __init__(self, client, job_id, fd_in, fd_out, on_other=None):
        self.client = client
        self.job_id = job_id
        self.fd_in = fd_in
        self.fd_out = fd_out
        self.on_other = on_other
        self.job = None
        self.detach_id = None

    def open(self):
        """Asks the daemon to attach; Lost or Refusal when it does not."""
        rows, cols = window(self.fd_out)
        args = {"id": self.job_id}
        if rows and cols:
            args.update(rows=rows, cols=cols)
        response = self.client.request("attach", args)
        if not response.get("ok"):
            raise Refusal(response.get("code"), response.get("error"))
        self.job = response["result"]
        return self.job

    def show(self, data):
        view = memoryview(data)
        while view:
            written = os.write(self.fd_out, view)
            view = view[written:]

    def run(self, key):
        """Raw mode, the alternate screen and the pump until a detach; the terminal as it
        was afterwards. Returns why it ended: None (the key), LOST, or the daemon's why."""
        name = printable(self.job["name"])
        hint = f"[roost] attached to {name} ({printable(self.job['id'])}); detach with {key[2]}"
        wake_read, wake_write = os.pipe()
        os.set_blocking(wake_write, False)
        previous_winch = signal.signal(signal.SIGWINCH, lambda *_: _poke(wake_write))
        saved = termios.tcgetattr(self.fd_in)
        self.show(hint.encode() + b"\r\n")
        try:
            tty.setraw(self.fd_in, termios.TCSANOW)
            self.show(ENTER + f"\x1b]2;roost: {name}\x07".encode())
            return self._pump(key, wake_read)
        finally:
            self.show(LEAVE)
            termios.tcsetattr(self.fd_in, termios.TCSADRAIN, saved)
            signal.signal(signal.SIGWINCH, previous_winch or signal.SIG_DFL)
            os.close(wake_read)
            os.close(wake_write)

    def _pump(self, key, wake_read):
        """Moves bytes both ways until a detach; returns why it ended (None: the key)."""
        job_id = self.job["id"]
        key_byte, key_kitty, _ = key
        hinted = False
        client = self.client
        pending = client.pending_events + client.take_messages()
        client.pending_events = []
        while True:
            for index, message in enumerate(pending):
                if message.get("event") == "output" and message.get("id") == job_id:
                    self.show(base64.b64decode(message["data"]))
                    if not hinted:
                        hinted = True
                        self._overlay_hint(key[2])
                elif message.get("event") == "detached" and message.get("id") == job_id:
                    self._hand_over(pending[index + 1:])
                    return message.get("why") or "detached"
                elif self.detach_id is not None and message.get("id") == self.detach_id:
                    self._hand_over(pending[index + 1:])
                    return None
                else:
                    self._hand_over([message])
            pending = []
            ready, _, _ = select.select([self.fd_in, client.sock, wake_read], [], [])
            if wake_read in ready:
                os.read(wake_read, 64)
                rows, cols = window(self.fd_out)
                if rows and cols:
                    client.send("attach-resize", {"id": job_id, "rows": rows, "cols": cols})
            if self.fd_in in ready:
                data = os.read(self.fd_in, 4096)
                if not data:
                    return "standard input closed"
                cut = find_key(data, key_byte, key_kitty)
                if cut is not None:
                    data = data[:cut]
                if data:
                    client.send("attach-input", {"id": job_id, "data": base64.b64encode(data).decode()})
                if cut is not None:
                    self.detach_id = client.send("detach", {"id": job_id})
            if client.sock in ready:
                try:
                    client.receive()
                except Lost:
                    return LOST
                pending = client.take_messages()

    def _hand_over(self, messages):
        """The connection's other pushes go to the caller (a hub keeps its rows)."""
        if self.on_other is not None:
            for message in messages:
                if "event" in message:
                    self.on_other(message)

    def _overlay_hint(self, name):
        """Shows the detach key on the bottom row until the job draws there again."""
        rows, cols = window(self.fd_out)
        if not rows:
            return
        text = f" detach: {name} "
        column = max(1, (cols or 80) - len(text) + 1)
        self.show(f"\x1b7\x1b[{rows};{column}H\x1b[7m{text}\x1b[0m\x1b8".encode())


def _poke(fd):
    try:
        os.write(fd, b"w")
    except OSError:
        pass


def find_key(data, key_byte, key_kitty):
    found = [index for index in (data.find(key_byte),
                                 data.find(key_kitty) if key_kitty else -1) if index >= 0]
    return min(found) if found else None


def attach(client, job_id, fd_in, fd_out, key_text=None, on_other=None):
    """One whole attach: open, pump, leave. Returns (job, why) as AttachSession.run;
    raises Refusal, Lost, or BadKey for a bad `key_text`."""
    key = parse_key(key_text) if key_text is not None else None
    session = AttachSession(client, job_id, fd_in, fd_out, on_other)
    previous = client.sock.gettimeout()
    client.sock.settimeout(None)
    try:
        job = session.open()
        if key is None:
            try:
                key = parse_key(job.get("detachKey") or "^q")
            except BadKey:
                key = parse_key("^q")
        return job, session.run(key)
    finally:
        client.sock.settimeout(previous)
