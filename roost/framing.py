"""One line framing for every stream of JSON lines roost speaks: the daemon's socket (the
server and its clients, attach included) and the keeper's socket (both ends). Standard
library only: the keeper and the CLI import it. roost_agent.py keeps its own, being one
file that imports nothing of roost's.

A stream is split at "\\n"; a "\\r" before it is dropped; blank lines are skipped. A line
longer than the limit (or a partial one that already is) raises LineTooLong: the stream
is then out of step and its connection should end.
"""

import json

MAX_LINE = 4 * 1024 * 1024      # the spec's request line limit (4 MiB)
_NEWLINE = ord("\n")
_CARRIAGE_RETURN = ord("\r")


class LineTooLong(Exception):
    pass


class LineReader:
    """Whole lines out of the chunks a socket gives, at most `limit` bytes each."""

    __slots__ = ("limit", "_buffer")

    def __init__(self, limit=MAX_LINE):
        self.limit = limit
        self._buffer = bytearray()

    @property
    def pending(self):
        """Bytes of a line not complete yet."""
        return len(self._buffer)

    def lines(self, data):
        """The lines `data` completes, in order (bytes, without their ends)."""
        if type(data) is not bytes:
            data = bytes(data)
        buffer = self._buffer
        # `10 in data` (an int: a memchr) costs a tenth of `b"\n" in data` (a buffer).
        if _NEWLINE not in data:
            # A piece of a line: kept, never searched again (a 4 MiB line in 64 KiB reads
            # costs one pass, not one per read).
            buffer += data
            if len(buffer) > self.limit:
                raise LineTooLong(f"a line over {self.limit} bytes")
            return []
        if buffer:
            data = bytes(buffer) + data
            buffer.clear()
        # One split in C for every line of the read: pipelined requests cost a few tens
        # of ns each here, not a find and a slice apiece.
        found = data.split(b"\n")
        rest = found.pop()
        if len(data) - len(rest) > self.limit and max(map(len, found)) > self.limit:
            raise LineTooLong(f"a line over {self.limit} bytes")
        if rest:
            if len(rest) > self.limit:
                raise LineTooLong(f"a line over {self.limit} bytes")
            buffer += rest
        if _CARRIAGE_RETURN in data:
            found = [line[:-1] if line.endswith(b"\r") else line for line in found]
        return [line for line in found if line and not line.isspace()]


class MessageReader(LineReader):
    """Decoded messages (JSON by default) out of a stream's chunks."""

    __slots__ = ("decode",)

    def __init__(self, limit=MAX_LINE, decode=json.loads):
        super().__init__(limit)
        self.decode = decode

    def messages(self, data):
        return [self.decode(line) for line in self.lines(data)]


def encode_line(value):
    """One message as a line, as roost's standard-library ends write it (the daemon writes
    the same bytes through roost.codec)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"
