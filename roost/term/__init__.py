"""A job's terminal in the daemon: the pty master read and written without holding the
loop, the bounded output log, attachers, typing, and the screen's reading."""
