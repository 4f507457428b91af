"""The socket server: connections, framing, limits and the envelope (spec "The wire").
It sees bytes; the ops see requests."""
