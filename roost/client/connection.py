"""A blocking client of the daemon's socket for the CLI (and the tests). Standard library
only: `roost list` must start fast, so nothing here imports gevent or dulwich."""

import collections
import os
import socket
import time

from roost import paths
from roost.framing import MAX_LINE, MessageReader, encode_line
from roost.unix import private_socket


COMMAND_EXIT_S = 5


class Unreachable(Exception):
    """No daemon answered and none could be started (CLI exit status 3)."""


class NotOurs(Unreachable):
    """The socket is someone else's: nothing was sent to it (issue 16)."""


class Refused(Exception):
    """The daemon refused the request (CLI exit status 1)."""

    def __init__(self, code, text):
        super().__init__(f"{code}: {text}")
        self.code = code
        self.text = text


class Lost(Exception):
    """The connection closed before the answer came."""


class Client:
    """One connection to a daemon: a unix socket of this machine's, or (`over_command`)
    the pipes of a command that reaches another machine's (`ssh HOST roost proxy`).
    Both look the same to the callers: `sock` is a socket they may select on."""

    def __init__(self, sock, process=None):
        self.sock = sock
        self.process = process      # the command carrying the bytes, when there is one
        self._reader = MessageReader(MAX_LINE)
        self._messages = collections.deque()   # read, not yet taken
        self._next_id = 0
        self.pending_events = []
        self.guard = None      # fn(op, args) run before each request: it may refuse to send it

    @classmethod
    def connect(cls, path, timeout=None):
        """A connection to the daemon at `path`, once it proved to be the user's own:
        NotOurs, before a byte is sent, for a socket or directory of someone else's."""
        _check_place(path)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(timeout)
        deadline = time.monotonic() + 5
        while True:
            try:
                sock.connect(path)
                _check_peer(sock, path)
                return cls(sock)
            except BlockingIOError:
                # A unix socket's backlog is full (EAGAIN): the daemon is busy accepting.
                if time.monotonic() < deadline:
                    time.sleep(0.005)
                    continue
                sock.close()
                raise
            except (OSError, NotOurs):
                sock.close()
                raise

    @classmethod
    def over_command(cls, argv, timeout=None, stderr=None, own_session=False):
        """A connection through a command's stdin and stdout (an argv list, never a
        shell string). One end of a socket pair is its stdin and stdout, so the
        connection is a socket like a local one: select, timeouts and attach work alike.
        `own_session`: away from the terminal (its Ctrl-c, its prompts), for a full-screen
        caller; else ssh may ask for a passphrase on the terminal, as it does anywhere."""
        import subprocess      # here: `roost list` on this machine does without it

        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            process = subprocess.Popen(argv, stdin=theirs, stdout=theirs, stderr=stderr,
                                       close_fds=True, start_new_session=own_session)
        except OSError:
            ours.close()
            raise
        finally:
            theirs.close()
        ours.settimeout(timeout)
        return cls(ours, process)

    def close(self):
        self.sock.close()
        if self.process is not None:
            import subprocess

            # Its stdin closed: ssh ends once the other side hung up; a stuck one is ended.
            try:
                self.process.wait(COMMAND_EXIT_S)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def send(self, op, args=None):
        if self.guard is not None:
            self.guard(op, args or {})
        self._next_id += 1
        self.sock.sendall(encode_line({"id": self._next_id, "op": op, "args": args or {}}))
        return self._next_id

    def read_message(self):
        while not self._messages:
            self.receive()
        return self._messages.popleft()

    def receive(self):
        """Reads once from the socket (it blocks until something comes) and keeps the
        messages it completes."""
        chunk = self.sock.recv(262144)
        if not chunk:
            raise Lost("the daemon closed the connection")
        self._messages.extend(self._reader.messages(chunk))

    def take_messages(self):
        """The messages read so far and not yet taken (for a caller that selects on the
        socket itself, like attach)."""
        messages = list(self._messages)
        self._messages.clear()
        return messages

    def request(self, op, args=None):
        """The whole response to one request (events that come first are kept aside)."""
        request_id = self.send(op, args)
        while True:
            message = self.read_message()
            if "event" in message:
                self.pending_events.append(message)   # events carry no request id
            elif message.get("id") == request_id:
                return message

    def call(self, op, args=None):
        response = self.request(op, args)
        if response.get("ok"):
            return response.get("result") or {}
        raise Refused(response.get("code", "internal"), response.get("error", "refused"))

    def next_event(self):
        if self.pending_events:
            return self.pending_events.pop(0)
        while True:
            message = self.read_message()
            if "event" in message:
                return message


def _check_place(path):
    try:
        private_socket.check_place(path)
    except private_socket.NotOurs as error:
        raise NotOurs(f"refusing to talk to {path}: {error}") from None


def _check_peer(sock, path):
    try:
        private_socket.check_peer(sock, path)
    except private_socket.NotOurs as error:
        raise NotOurs(f"refusing to talk to {path}: {error}") from None


def _start_daemon(env):
    """Start a detached daemon; wait until it answers. Returns an error text or None."""
    import subprocess

    from roost.bundle.userenv import detached_environ, roost_command

    home = paths.home(env)
    with open(os.devnull, "rb") as null_in, open(os.devnull, "wb") as null_out:
        process = subprocess.Popen(roost_command() + ["daemon", "--foreground", "--detached"],
                                   stdin=null_in, stdout=null_out, stderr=subprocess.PIPE,
                                   start_new_session=True, env=detached_environ(env), close_fds=True)
    path = paths.default_socket(home, env)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        try:
            Client.connect(path, timeout=2).close()
            process.stderr.close()
            return None
        except OSError:
            pass
        if process.poll() is not None:
            why = process.stderr.read().decode("utf-8", "replace").strip()
            process.stderr.close()
            # Another daemon may have won the race for the lock: then it answers soon.
            if "already serves" in why:
                deadline = min(deadline, time.monotonic() + 5)
                time.sleep(0.02)
                continue
            return why or f"the daemon exited with status {process.returncode}"
        time.sleep(0.01)
    process.stderr.close()
    return "the daemon did not answer within 15 s"


def connect(env=None, socket_override=None, autostart=True, timeout=None):
    """A connection to the daemon, starting one when none answers (like tmux)."""
    env = os.environ if env is None else env
    path = paths.socket_path(env, socket_override)
    try:
        return Client.connect(path, timeout)
    except (FileNotFoundError, ConnectionRefusedError) as error:
        own_socket = not socket_override and not env.get("ROOST_SOCKET")
        if not autostart or not own_socket:
            raise Unreachable(f"no daemon answers on {path}: {error.strerror}")
    except OSError as error:
        raise Unreachable(f"cannot reach the daemon on {path}: {error.strerror or error}")
    why = _start_daemon(env)
    if why:
        raise Unreachable(f"could not start the daemon: {why}")
    try:
        return Client.connect(path, timeout)
    except OSError as error:
        raise Unreachable(f"the daemon started but {path} does not answer: {error.strerror}")


def new_request_id():
    return "cli-" + os.urandom(12).hex()


def request_once(env, socket_override, op, args, opener=None):
    """M36: send with a fresh requestId; when the answer is lost, resend once on a new
    connection with the same id (never after a refusal). `opener()` makes each
    connection (another machine's), else this machine's daemon is connected to."""
    args = dict(args)
    args.setdefault("requestId", new_request_id())
    for attempt in (1, 2):
        client = opener() if opener is not None else connect(env, socket_override)
        try:
            return client.call(op, args)
        except (Lost, ConnectionResetError, BrokenPipeError):
            if attempt == 2:
                raise Unreachable(f"the daemon did not answer {op} (the connection was lost twice)")
        finally:
            client.close()
