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
        buffer = self._buffer
        buffer += data
        found = []
        start = 0
        while True:
            end = buffer.find(b"\n", start)
            if end < 0:
                break
            if end - start > self.limit:
                raise LineTooLong(f"a line over {self.limit} bytes")
            stop = end - 1 if end > start and buffer[end - 1] == 13 else end
            if stop > start and not buffer[start:stop].isspace():
                found.append(bytes(buffer[start:stop]))
            start = end + 1
        if start:
            del buffer[:start]
        if len(buffer) > self.limit:
            raise LineTooLong(f"a line over {self.limit} bytes")
        return found


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
