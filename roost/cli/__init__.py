"""The `roost` command: a client of the daemon's socket. Nothing here imports gevent,
pyte or dulwich: `roost list` must start fast."""
