"""File descriptors: what a read buffer holds, asked without waiting on it; closing
several that may be gone already."""

import fcntl
import os
import struct
import termios


def bytes_ready(fd):
    """What an fd's read buffer holds, a pty's or a socket's (FIONREAD answers without
    waiting on it)."""
    return struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"))[0]


def close_all(fds):
    """Closes each fd; one closed already (or never valid) does not stop the rest."""
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass
